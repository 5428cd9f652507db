"""The mirror's exception tree as Google-style errors: REST JSON bodies, MCP tool errors, pages.

`STATUS_TABLE` below is the one map from the error tree (mirror/errors.py) to an HTTP status
and google.rpc code; the REST API, the MCP tools and the browser's error pages all read it:

    InvalidInput, BadRequest          400 INVALID_ARGUMENT
    NotCached (miss, not fetching)    404 NOT_FOUND   names the nearest cached documents
    NotFound (upstream has none)      404 NOT_FOUND
    QuotaExceeded                     429 RESOURCE_EXHAUSTED
    Unavailable                       503 UNAVAILABLE         (worth a retry)
    IndexRebuilding                   503 UNAVAILABLE         with Retry-After: the search index
                                                              is being rebuilt
    WriteConflict                     503 UNAVAILABLE         a write collided with another
                                                              writer's past its retries
    other upstream / config errors    502 UNAVAILABLE         (this mirror's upstream failed)
    StoreError, OutputError           500 INTERNAL
    anything else                     500 INTERNAL            (details stay in the server log)

A failure of this mirror's own upstream or setup (the 502s, and an upstream's 429, 503 or 400)
is the operator's business: a caller is told what happened without the upstream's URL, the names
of the mirror's settings or the operator's hints, which go to the server log (`served`).

A miss while not allowed to fetch is a 404, not a 503: retrying will not help (clients retry
503), and a 404 that names the missing document lets a downstream dk-mirror narrow a batch
down to it and still cache the rest, as it does with Google's atomic batchGet 404.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

import orjson
from mcp_types import CallToolResult, TextContent

from ..config import ENV_VARS
from ..errors import (
    STATUS_BY_HTTP,
    BadRequest,
    ConfigError,
    IndexRebuilding,
    InvalidInput,
    MirrorError,
    NotCached,
    NotFound,
    OutputError,
    QuotaExceeded,
    StoreError,
    Unavailable,
    UpstreamError,
    WriteConflict,
)

log = logging.getLogger("mirror.serve")


@dataclass(frozen=True, slots=True)
class ApiError:
    """One error as the API reports it: HTTP status, google.rpc code name, message."""

    status: int
    code: str
    message: str
    retry_after: int | None = None  # seconds, for a Retry-After header (IndexRebuilding)

    def body(self) -> dict[str, Any]:
        """The `{"error": {"code", "message", "status"}}` JSON Google sends."""
        return {"error": {"code": self.status, "message": self.message, "status": self.code}}

    def tool_text(self) -> str:
        """The text of an MCP tool error: the code word first, so clients can classify it."""
        return f"{self.code} ({self.status}): {self.message}"


def make(status: int, message: str) -> ApiError:
    """An ApiError for `status` with the matching google.rpc code name."""
    return ApiError(status, STATUS_BY_HTTP.get(status, "UNKNOWN"), message)


# Most specific class first: the first row `exc` is an instance of gives its status and code.
STATUS_TABLE: tuple[tuple[type[MirrorError], int, str], ...] = (
    # A file this server could not write (a full disk) is its own failure, not the caller's.
    (OutputError, 500, "INTERNAL"),
    (InvalidInput, 400, "INVALID_ARGUMENT"),  # and InvalidName
    (BadRequest, 400, "INVALID_ARGUMENT"),
    (NotCached, 404, "NOT_FOUND"),
    (NotFound, 404, "NOT_FOUND"),
    (QuotaExceeded, 429, "RESOURCE_EXHAUSTED"),
    (Unavailable, 503, "UNAVAILABLE"),
    (IndexRebuilding, 503, "UNAVAILABLE"),  # a StoreError: before that row
    # Another writer's transaction won past every retry: the same call again will go through.
    (WriteConflict, 503, "UNAVAILABLE"),
    (StoreError, 500, "INTERNAL"),  # and SchemaError
    # AuthError, PermissionDenied, ProtocolError; ConfigError and NetworkForbidden: the
    # mirror's own upstream (or setup) failed; the caller's request and credentials are fine,
    # and a retry will not help.
    (UpstreamError, 502, "UNAVAILABLE"),
    (ConfigError, 502, "UNAVAILABLE"),
    (MirrorError, 500, "INTERNAL"),
)


def status_of(exc: MirrorError) -> tuple[int, str]:
    """The HTTP status and google.rpc code name for `exc`, from `STATUS_TABLE`."""
    for kind, status, code in STATUS_TABLE:
        if isinstance(exc, kind):
            return status, code
    raise AssertionError("unreachable: MirrorError is the table's last row")


_URL = re.compile(r"\b(?:https?|wss?)://[^\s'\"<>]+")
_SETTING = re.compile(r"\b(?:" + "|".join(map(re.escape, ENV_VARS)) + r")\b")
# What a caller can do about a failure of this mirror's upstream or setup, by status.
_CALLER_HINTS = {
    502: "this mirror's operator finds the details in its server log",
    503: "retry later",
    429: "retry in a minute",
}


def served(exc: MirrorError, *, secret: str | None = None) -> tuple[str, str | None]:
    """The message and hint a caller is told of `exc` (REST, MCP and the web pages alike)."""
    status, _code = status_of(exc)
    message, hint = exc.message, exc.hint
    if isinstance(exc, UpstreamError | ConfigError) and not isinstance(exc, NotFound):
        # The operator's: the whole of it, hint and all, in the server log.
        log.warning("answered %d for this mirror's upstream or setup: %s", status, exc)
        message = _SETTING.sub("a setting", _URL.sub("its upstream", message))
        if status in _CALLER_HINTS:
            hint = _CALLER_HINTS[status]
        elif hint is not None:  # a request upstream refused as invalid: how to fix it
            hint = _SETTING.sub("a setting", _URL.sub("its upstream", hint))
    if status == 502:
        cause = "upstream failed" if isinstance(exc, UpstreamError) else "setup is unusable"
        message = f"this mirror's {cause}: {message}"
    return scrub(message, secret), scrub(hint, secret) if hint else None


def from_exception(exc: BaseException, *, secret: str | None = None) -> ApiError:
    """The ApiError for any exception; unexpected ones say only 'internal error'."""
    if not isinstance(exc, MirrorError):
        log.exception("unexpected error while serving a request", exc_info=exc)
        return make(500, "internal error in dk-mirror; the server log has the details")
    status, code = status_of(exc)
    message, hint = served(exc, secret=secret)
    if hint:
        message = f"{message}\nhint: {hint}"
    retry_after = exc.retry_after if isinstance(exc, IndexRebuilding) else None
    return ApiError(status, code, message, retry_after)


def scrub(text: str, secret: str | None) -> str:
    """`text` without the upstream API key (the error tree never quotes it; this is a backstop)."""
    return text.replace(secret, "***") if secret else text


def tool_error(error: ApiError) -> CallToolResult:
    """An MCP tool result with `isError` set and the message as text."""
    return CallToolResult(content=[TextContent(type="text", text=error.tool_text())], is_error=True)


def tool_result(payload: dict[str, Any], meta: dict[str, Any] | None = None) -> CallToolResult:
    """An MCP tool result: `structuredContent` plus the same JSON as a text block, and `meta`
    (the result's `_meta`, outside the tool's output schema) when given."""
    # orjson: the text block of 20 documents in a fifth of json's time (rest_api.encode).
    text = orjson.dumps(payload).decode()
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=payload,
        is_error=False,
        _meta=meta,
    )
