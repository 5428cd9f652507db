"""`dk-mirror serve`: the mirror as an MCP server, a REST v1 look-alike and a docs browser.

The only package that imports mcp, starlette, uvicorn and jinja2. Importing it is cheap (only
the options); `app.build_app` pulls in the web stack when a server is actually built.
"""

from .options import DEFAULT_HOST, DEFAULT_PORT, MODES, ServeOptions

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MODES", "ServeOptions"]
