"""Checks every request passes before any route runs: Host, Origin, then the bearer token.

- Host must name this server (loopback names, the bound address, `--allow-host` names): a
  web page on a rebinding domain (DNS pointing evil.example at 127.0.0.1) sends its own name.
- Origin, when a browser sends one, must be this server's own origin: one of those names AND
  this server's port. No other site's scripts may call the API or MCP endpoint, not even a page
  served by another program on a loopback port (http://localhost:3000). `--allow-host` names
  (a reverse proxy's) are also accepted on the default ports, where a proxy serves them.
- With a token, `Authorization: Bearer TOKEN` is required (or `X-Goog-Api-Key: TOKEN`, so a
  Google client library or another dk-mirror can present it as its API key).
"""

from __future__ import annotations

import hmac
import logging

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from . import api_errors
from .options import ServeOptions
from .rest_api import error_response

log = logging.getLogger("mirror.serve")


def hostname_of(host_header: str) -> str:
    """The name part of a Host header: `[::1]:8787` -> `[::1]`, `Example:80` -> `example`."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def own_origins(options: ServeOptions) -> frozenset[str]:
    """Every Origin a page served by this server can send (lower case, as browsers send it).

    `options.port` must be the port actually bound (not 0). The MCP SDK's own check is given
    the same list (app.transport_security), so the two can never disagree.
    """
    origins = set()
    for name in options.host_names():
        for scheme, default_port in (("http", 80), ("https", 443)):
            origins.add(f"{scheme}://{name}:{options.port}")
            if options.port == default_port:  # browsers leave a scheme's default port out
                origins.add(f"{scheme}://{name}")
    for name in options.allowed_hosts:
        origins.update({f"http://{name.lower()}", f"https://{name.lower()}"})
    return frozenset(origins)


def check(
    headers: Headers, options: ServeOptions, allowed: frozenset[str], origins: frozenset[str]
) -> api_errors.ApiError | None:
    """Why a request with these headers must be refused, or None when it may proceed."""
    host = headers.get("host")
    if not host or hostname_of(host) not in allowed:
        return api_errors.make(
            403,
            f"Host {host!r} is not a name this server answers to (DNS rebinding protection). "
            f"If it names this machine, restart with `dk-mirror serve --allow-host "
            f"{hostname_of(host or '?')}`.",
        )
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower() not in origins:
        return api_errors.make(
            403,
            f"Origin {origin!r} may not call this server: only pages it serves itself may "
            f"(http://{hostname_of(host)}:{options.port}); cross-site requests are refused.",
        )
    if options.token is not None and not _presents(headers, options.token):
        return api_errors.make(
            401,
            "this server requires a bearer token: send `Authorization: Bearer TOKEN` "
            "(or `X-Goog-Api-Key: TOKEN`)",
        )
    return None


def _presents(headers: Headers, token: str) -> bool:
    expected = token.encode("utf-8")
    scheme, _, value = headers.get("authorization", "").partition(" ")
    # Constant-time comparisons: the time taken must not reveal how much of a guess matched.
    bearer = scheme.lower() == "bearer" and hmac.compare_digest(
        value.strip().encode("utf-8"), expected
    )
    key = hmac.compare_digest(headers.get("x-goog-api-key", "").encode("utf-8"), expected)
    return bearer or key


class RequestGuard:
    """ASGI middleware applying `check` to every HTTP request (and refusing websockets)."""

    def __init__(self, app: ASGIApp, options: ServeOptions) -> None:
        self.app = app
        self.options = options
        self.allowed = options.host_names()
        self.origins = own_origins(options)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 403/401 here, or pass the request on."""
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        problem = check(Headers(scope=scope), self.options, self.allowed, self.origins)
        if problem is None:
            await self.app(scope, receive, send)
            return
        log.warning("refused %s %s: %s", scope["method"], scope["path"], problem.message)
        headers = {"WWW-Authenticate": 'Bearer realm="dk-mirror"'} if problem.status == 401 else {}
        await error_response(problem, headers)(scope, receive, send)
