"""Jinja2 environment and HTML responses for the browser pages (escaping on by default)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.responses import HTMLResponse

from ...render.links import doc_path, is_web_url
from ...render.units import size
from ...search.snippets import plain_title
from .timeline import history_url
from .views import ago, browse_path, when

HERE = Path(__file__).resolve().parent
TEMPLATES_DIR = HERE / "templates"
STATIC_DIR = HERE / "static"

# Pages load only our own stylesheet and script (type-ahead, the tree): no inline script or
# style, images only from here or data: URIs, and nothing may frame the pages or send a form
# elsewhere. Every page works with scripts off too.
CSP = (
    "default-src 'self'; style-src 'self'; img-src 'self' data:; script-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
PAGE_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # A click on an external link must not tell the other site which local page it came from.
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
NAV = (("home", "/", "Home"), ("browse", "/browse/", "Browse"), ("search", "/search", "Search"),
       ("changes", "/changes", "Changes"))  # fmt: skip
NAV_STATUS = ("status", "/status", "Status")


@lru_cache(maxsize=1)
def environment() -> Environment:
    """The template environment: autoescape everywhere, unknown variables are errors."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # `plain_title`: a stored title as text (`&nbsp;` and backticks in it are not shown).
    env.filters.update(when=when, size=size, doc_path=doc_path, browse_path=browse_path,
                       history_url=history_url, plain_title=plain_title)  # fmt: skip
    # `is web_url`: a document's own fields (its `uri`) are data, and become a link only when
    # they are http(s); a `javascript:` uri is shown as text.
    env.tests.update(web_url=is_web_url)
    env.globals.update(ago=ago, nav=(*NAV, NAV_STATUS))
    return env


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render `template` into an HTML response with the security headers."""
    context.setdefault("section", "")
    context.setdefault("q", "")
    body = environment().get_template(template).render(**context)
    return HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)
