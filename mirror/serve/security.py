"""Checks every request passes before any route runs: Host, Origin, then the bearer token.

- Host must name this server (loopback names, the bound address, `--allow-host` names): a
  web page on a rebinding domain (DNS pointing evil.example at 127.0.0.1) sends its own name.
- Origin, when a browser sends one, must be an http(s) origin on one of those names: no other
  site's scripts may call the API or MCP endpoint, even through a loopback address.
- With a token, `Authorization: Bearer TOKEN` is required (or `X-Goog-Api-Key: TOKEN`, so a
  Google client library or another dk-mirror can present it as its API key).
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import urlsplit

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


def check(
    headers: Headers, options: ServeOptions, allowed: frozenset[str]
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
    if origin is not None:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or hostname_of(parts.netloc) not in allowed:
            return api_errors.make(
                403,
                f"Origin {origin!r} may not call this server: cross-site requests are refused.",
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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 403/401 here, or pass the request on."""
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await send({"type": "websocket.close", "code": 1008})
            return
        problem = check(Headers(scope=scope), self.options, self.allowed)
        if problem is None:
            await self.app(scope, receive, send)
            return
        log.warning("refused %s %s: %s", scope["method"], scope["path"], problem.message)
        headers = {"WWW-Authenticate": 'Bearer realm="dk-mirror"'} if problem.status == 401 else {}
        await error_response(problem, headers)(scope, receive, send)
