"""One Starlette app on one port: MCP at /mcp, REST under /v1/ and /v1alpha/, change feeds
under /feeds/, the browser at /."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Route

from .answer_cache import AnswerCache
from .body_limit import BodyLimit
from .feeds import feed_routes
from .mcp_replay import McpReplay
from .mcp_server import build_server
from .options import ServeOptions
from .rest_api import rest_routes
from .security import RequestGuard, own_origins

if TYPE_CHECKING:
    from ..service import Mirror

MCP_PATH = "/mcp"
# Blocking calls (SQLite, upstream HTTP) running at once: the size of anyio's default thread
# limiter, which both Starlette's run_in_threadpool and the MCP SDK's sync tools go through.
# The store keeps a connection for each, so no request ever waits for a connection.
WORKER_THREADS = 40


def build_app(mirror: Mirror, options: ServeOptions, *, replay: bool = True) -> Starlette:
    """The whole server for `mirror`, every route behind the Host/Origin/token guard and body limit.

    `replay`: a read-only server answers repeated get_documents calls with the SDK's own
    earlier answer (mcp_replay.py); False sends every MCP request through the SDK.
    """
    prepare(mirror, options)
    cache = answer_cache(mirror, options)
    server = build_server(mirror, options, cache)
    # Stateless, plain-JSON streamable HTTP, like Google's endpoint: a client may call
    # tools/call without initialize or a session, and every answer is one JSON body.
    mcp_http = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(options),
    )
    routes: list[BaseRoute] = [
        *mcp_routes(mcp_http.routes, cache if replay else None),
        *rest_routes(mirror, options, cache),
        *feed_routes(mirror, options),
        *browser_routes(mirror, options),
    ]

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # The limiter belongs to the running event loop, so it can only be set from inside it.
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        async with server.session_manager.run():
            yield

    # The guard runs first: a stranger's request is refused before its body is read.
    middleware = [Middleware(RequestGuard, options=options), Middleware(BodyLimit)]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


def mcp_routes(routes: list[BaseRoute], cache: AnswerCache | None) -> list[BaseRoute]:
    """The SDK's routes, its /mcp endpoint behind McpReplay when there is a documents cache."""
    if cache is None:
        return routes
    out: list[BaseRoute] = []
    for route in routes:
        if isinstance(route, Route) and route.path == MCP_PATH:
            route = Route(MCP_PATH, endpoint=McpReplay(route.endpoint, cache))
        out.append(route)
    return out


def prepare(mirror: Mirror, options: ServeOptions) -> None:
    """Open the store, and the upstream client when fetching, before the first request.

    Requests run on many threads at once; opening both now avoids racing to open them, and a
    setup problem (no API key, a bad store) stops the start instead of failing every request.
    The store is sized for the worker threads (plus the event loop's own calls).
    """
    mirror.prepare(online=options.fetches, concurrency=WORKER_THREADS)


def answer_cache(mirror: Mirror, options: ServeOptions) -> AnswerCache | None:
    """The documents cache for a server that never fetches (see answer_cache.py); else None."""
    return None if options.fetches else AnswerCache(mirror.store_generation)


def transport_security(options: ServeOptions) -> TransportSecuritySettings:
    """The MCP SDK's own Host/Origin check, with the same names as RequestGuard (belt and braces)."""
    names = sorted(options.host_names())
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for name in names for form in (name, f"{name}:*")],
        allowed_origins=sorted(own_origins(options)),
    )


def browser_routes(mirror: Mirror, options: ServeOptions) -> list[BaseRoute]:
    """The docs browser's routes (home, tree, documents, search, status, static files)."""
    from .web.routes import WebOptions, web_routes

    # `fetches` is serve's final say on contacting upstream (the mode and --allow-fetch).
    return web_routes(mirror, WebOptions(allow_fetch=options.fetches, mode=options.request_mode))
