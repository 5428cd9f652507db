"""Map upstream error answers (HTTP statuses, Google error JSON, MCP error text) into errors.py."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import httpx

from ..config import ENV_UPSTREAM, GOOGLE_UPSTREAM
from ..errors import (
    STATUS_BY_HTTP,
    AuthError,
    BadRequest,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
    UpstreamError,
    WrongUpstream,
)
from .retry import QUOTA_HINT, RETRYABLE_STATUSES, UNAVAILABLE_HINT, Transient, parse_retry_after

SERVICE = "developerknowledge.googleapis.com"
ENABLE_HINT = f"enable the API: gcloud services enable {SERVICE} --project=PROJECT_ID"
KEY_TARGET_HINT = (
    f"allow the key to call the API: gcloud services api-keys update KEY_NAME "
    f"--api-target=service={SERVICE}"
)
BATCH_INVALID_HINT = "names must be at most 500 characters and at most 20 per batch"
QUERY_INVALID_HINT = (
    "the query and the filter must each be at most 500 characters; a filter compares "
    "data_source, uri, update_time or content_length_bytes with double-quoted values, "
    'e.g. data_source = "web.dev" AND update_time >= "2026-01-01T00:00:00Z"; a page token '
    "works only with the query and filter of the search that gave it"
)
KEY_HINT = (
    "check DEVELOPER_KNOWLEDGE_API_KEY (create a key with `gcloud services api-keys create`), "
    "or work from the local store with --offline"
)

# google.rpc.Code names and the HTTP status each maps to (AIP-193).
CODE_TO_HTTP = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "OUT_OF_RANGE": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "ABORTED": 409,
    "ALREADY_EXISTS": 409,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INTERNAL": 500,
    "DATA_LOSS": 500,
    "UNIMPLEMENTED": 501,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
HTTP_TO_CODE = STATUS_BY_HTTP
_CODE_WORD = re.compile(r"\b(" + "|".join(CODE_TO_HTTP) + r")\b")
# A bare status number, not part of a path or a longer number (names contain digits).
_HTTP_NUMBER = re.compile(r"(?<![\w/.%-])(400|401|403|404|429|500|502|503|504)(?![\w/%-])")
_MAX_TEXT = 300


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """What an error answer said: HTTP status, Google code word, message, reasons."""

    status: int | None
    code: str | None
    message: str
    reasons: tuple[str, ...] = ()


def scrub(text: str, key: str | None) -> str:
    """`text` with the API key replaced by *** and trimmed to a readable length."""
    if key:
        text = text.replace(key, "***")
    text = " ".join(text.split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def parse_error_body(status: int | None, body: str, *, key: str | None = None) -> ErrorDetail:
    """Read a Google JSON error (or a JSON-RPC error, or plain text) returned with `status`."""
    data: Any = None
    with contextlib.suppress(ValueError):
        data = json.loads(body)
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        text = scrub(message if isinstance(message, str) else json.dumps(error), key)
        code = error.get("status") if isinstance(error.get("status"), str) else None
        number = error.get("code")
        # Google puts the HTTP status in `code`; JSON-RPC puts a negative number there.
        if isinstance(number, int) and 100 <= number <= 599:
            status = number
        reasons = tuple(
            d["reason"]
            for d in error.get("details") or ()
            if isinstance(d, dict) and isinstance(d.get("reason"), str)
        )
        return _refine(ErrorDetail(status, code, text, reasons))
    return _refine(ErrorDetail(status, None, scrub(body, key) or "(empty body)"))


def parse_error_text(text: str, *, key: str | None = None) -> ErrorDetail:
    """Read an error given only as text (MCP isError content, JSON-RPC error messages)."""
    stripped = text.strip()
    if stripped.startswith("{"):
        detail = parse_error_body(None, stripped, key=key)
        if detail.status is not None or detail.code is not None:
            return detail
    return _refine(ErrorDetail(None, None, scrub(text, key) or "(no message)"))


def _refine(detail: ErrorDetail) -> ErrorDetail:
    """Fill in the status or code word from each other, or from the message text."""
    status, code, message = detail.status, detail.code, detail.message
    if code is None:
        match = _CODE_WORD.search(message)
        code = match.group(1) if match else None
    if status is None and code is not None:
        status = CODE_TO_HTTP.get(code)
    if status is None:
        number = _HTTP_NUMBER.search(message)
        status = int(number.group(1)) if number else None
    if status is None:
        lowered = message.lower()
        if "api key not valid" in lowered:
            status = 400
        elif any(w in lowered for w in ("unregistered callers", "credentials", "unauthenticated")):
            status = 401
        elif _is_disabled(lowered, ()) or _is_blocked(lowered, ()):
            status = 403
        elif "quota" in lowered:
            status = 429
        elif "not found" in lowered:
            status = 404
        elif "invalid" in lowered or "must be" in lowered or "at most" in lowered:
            status = 400
    if code is None and status is not None:
        code = HTTP_TO_CODE.get(status)
    return ErrorDetail(status, code, message, detail.reasons)


def _is_disabled(lowered: str, reasons: Sequence[str]) -> bool:
    return (
        "SERVICE_DISABLED" in reasons or "has not been used" in lowered or "is disabled" in lowered
    )


def _is_blocked(lowered: str, reasons: Sequence[str]) -> bool:
    return "API_KEY_SERVICE_BLOCKED" in reasons or "are blocked" in lowered


def named_document(message: str, names: Sequence[str]) -> str | None:
    """The requested name an error message mentions (the longest, if several match), or None."""
    best: str | None = None
    for name in names:
        # The name must end where the message's token ends: "documents/a/b" must not match
        # inside "documents/a/bc" or "documents/a/b/c". A trailing full stop ends a sentence.
        pattern = re.escape(name) + r"(?![\w~%/+-]|\.[\w~%/+-])"
        if re.search(pattern, message) and (best is None or len(name) > len(best)):
            best = name
    return best


def to_error(detail: ErrorDetail, *, what: str, names: Sequence[str] = ()) -> UpstreamError:
    """The errors.py exception for `detail`, saying what was being done and what to do next."""
    status, code, message = detail.status, detail.code, detail.message
    lowered = message.lower()
    head = f"{what}: HTTP {status if status is not None else '?'} {code or 'error'}: {message}"
    if status == 400 and ("API_KEY_INVALID" in detail.reasons or "api key not valid" in lowered):
        return AuthError(head, status=status, code=code, hint=KEY_HINT)
    if status == 400:
        # Only Get and BatchGet send names; search and answer send a query and a filter.
        hint = BATCH_INVALID_HINT if names else QUERY_INVALID_HINT
        return BadRequest(head, status=status, code=code, hint=hint)
    if status == 401:
        return AuthError(head, status=status, code=code, hint=KEY_HINT)
    if status == 403:
        if _is_disabled(lowered, detail.reasons):
            hint = ENABLE_HINT
        elif _is_blocked(lowered, detail.reasons):
            hint = KEY_TARGET_HINT
        else:
            hint = f"{ENABLE_HINT}; and {KEY_TARGET_HINT}"
        return PermissionDenied(head, status=status, code=code, hint=hint)
    if status == 404:
        named = named_document(message, names)
        if named is not None:
            return NotFound([named], hint=f"upstream said: {message}")
        whole = " A batch fails whole when any one name is missing." if len(names) > 1 else ""
        return NotFound(
            list(names) or ["(unknown)"],
            hint=(
                f"upstream said: {message.rstrip('.')}.{whole} Check the name(s); a 404 from the /mcp "
                "endpoint itself can mean the API is not enabled for the project"
            ),
        )
    if status == 429:
        return QuotaExceeded(head, status=status, code=code, hint=QUOTA_HINT)
    if status is not None and status >= 500:
        return Unavailable(head, status=status, code=code, hint=UNAVAILABLE_HINT)
    return UpstreamError(head, status=status, code=code)


def fail(
    detail: ErrorDetail,
    *,
    what: str,
    names: Sequence[str] = (),
    retry_after: float | None = None,
) -> NoReturn:
    """Raise the mapped error, wrapped as Transient when a retry may cure it."""
    error = to_error(detail, what=what, names=names)
    if detail.status in RETRYABLE_STATUSES:
        raise Transient(error, retry_after)
    raise error


# What a server says of a route it lacks, as opposed to a document it lacks: Google's and
# dk-mirror's "Method not found: GET /v1/v1/...", a front end's "The requested URL ... was not
# found on this server", a framework's "Cannot GET /...".
_NO_ROUTE = re.compile(
    r"method not found|not found on this server|no route|unknown (?:route|path|method)"
    r"|cannot (?:get|post)\b",
    re.IGNORECASE,
)


def route_missing(body: str, *, key: str | None = None) -> str | None:
    """What a 404 body is when it is not the API's answer for a missing document (a Google
    JSON error, status NOT_FOUND, about a document), or None when it is that answer."""
    data: Any = None
    with contextlib.suppress(ValueError):
        data = json.loads(body)
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        text = body.strip()
        if not text:
            return "an empty body"
        return "an HTML page" if text.startswith("<") else f"{scrub(text, key)[:80]!r}"
    message = error.get("message")
    if isinstance(message, str) and _NO_ROUTE.search(message):
        return repr(scrub(message, key))
    return None


def raise_for_response(
    response: httpx.Response, *, what: str, names: Sequence[str] = (), key: str | None = None
) -> None:
    """Return if `response` succeeded; otherwise raise its mapped error (Transient if retryable).

    A 404 that is not the API's error for a missing document means the URL names a route the
    server does not have (a base URL ending in a path, say): WrongUpstream, never NotFound, so
    no name is ever taken for missing on such an answer."""
    if response.is_success:
        return
    if response.status_code == 404:
        body = route_missing(response.text, key=key)
        if body is not None:
            where = response.request.url.copy_with(query=None, fragment=None)
            hint = (
                f"set --upstream or {ENV_UPSTREAM} to the API's base URL ({GOOGLE_UPSTREAM}, "
                "with no path: dk-mirror adds /v1/... and /mcp) or to a dk-mirror server's "
                "http://HOST:PORT"
            )
            if where.path.endswith("/mcp"):
                hint += f"; Google's /mcp also answers 404 when the API is off: {ENABLE_HINT}"
            raise WrongUpstream(
                f"{what}: {where} answered HTTP 404 with {body}, not the API's error for a "
                "missing document: the upstream URL looks wrong",
                hint=hint,
            )
    detail = parse_error_body(response.status_code, response.text, key=key)
    if detail.status != response.status_code:
        # The HTTP status is authoritative; a body's `code` only fills in what it lacks.
        detail = ErrorDetail(response.status_code, detail.code, detail.message, detail.reasons)
    fail(
        detail,
        what=what,
        names=names,
        retry_after=parse_retry_after(response.headers.get("retry-after")),
    )
