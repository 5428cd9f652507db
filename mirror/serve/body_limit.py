"""A size limit on every request body, enforced before any route reads it.

Without it `POST /v1:answerQuery` read a body of any size into memory (400 MiB took the server
from 99 MB to 919 MB). A declared Content-Length over the limit is refused without reading a
byte; a body without one (chunked) is read only up to the limit, then refused.
"""

from __future__ import annotations

import logging
from collections import deque

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .api_errors import ApiError
from .rest_api import error_response

log = logging.getLogger("mirror.serve")

# The largest legitimate request is an MCP tools/call or answerQuery of a few kilobytes
# (20 names of at most 500 characters, a query); 1 MiB leaves a wide margin.
MAX_BODY_BYTES = 1024 * 1024


def too_large(limit: int) -> ApiError:
    """The Google-style 413: what happened and what to send instead."""
    return ApiError(
        413,
        "INVALID_ARGUMENT",
        f"the request body is larger than this server accepts ({limit:,} bytes); "
        "send a smaller request (at most 20 names, a query of at most 500 characters)",
    )


class BodyLimit:
    """ASGI middleware answering 413 to request bodies over `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse an oversized body, or pass the request on with its body replayed."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        # Read the body now, counting every chunk (Content-Length may be absent or wrong);
        # the limit bounds what is held, and the app then reads it as usual.
        chunks: deque[Message] = deque()
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            if message["type"] != "http.request":
                break  # a disconnect: the app sees it in turn
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                await self._refuse(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return chunks.popleft() if chunks else await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        log.warning(
            "refused %s %s: body over %d bytes", scope["method"], scope["path"], self.max_bytes
        )
        # The rest of the body stays unread: uvicorn closes the connection after the answer.
        response = error_response(too_large(self.max_bytes), {"Connection": "close"})
        await response(scope, receive, send)
