"""Provenance on every answer: how fresh each page served was, without touching Google's
schemas. REST carries it in response headers, MCP in the result's `_meta` (the SDK's
CallToolResult.meta), both built here from the same service records.

REST headers (lists are in the order of the documents in the body, comma-separated):
    X-Mirror-Source        cache | upstream | stale per document (a search: local |
                           recorded | upstream, for the page)
    X-Mirror-Fetched-At    when each copy was fetched (RFC 3339)
    X-Mirror-Update-Time   each document's own updateTime ("-" when it has none)
    X-Mirror-Recorded-At   a recorded search page or answer: when it was recorded
    X-Mirror-As-Of         serve --as-of: the instant the store answers as of (RFC 3339)
    Memento-Datetime       serve --as-of (RFC 7089, an HTTP-date): for one document, when the
                           copy served was captured (fetched); for a batch, a search or an
                           answer, the instant the store answers as of
"""

from __future__ import annotations

from collections.abc import Sequence
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from ..models import rfc3339

if TYPE_CHECKING:
    from ..models import Source
    from ..service.documents import Served

# The `_meta` key of a tool result: prefixed, as MCP asks of keys that are not its own.
META_KEY = "dk-mirror/provenance"


def http_date(epoch: float) -> str:
    """An HTTP-date (RFC 9110 IMF-fixdate), as Memento-Datetime takes."""
    return formatdate(epoch, usegmt=True)


def _as_of(as_of: float | None, captured: float | None) -> dict[str, str]:
    if as_of is None:
        return {}
    return {
        "X-Mirror-As-Of": rfc3339(as_of) or "",
        "Memento-Datetime": http_date(as_of if captured is None else captured),
    }


def document_headers(served: Sequence[Served], as_of: float | None) -> dict[str, str]:
    """Headers of a get or batchGet answer: each document's source, fetch and update times."""
    one = served[0].fetched_at if len(served) == 1 else None
    return {
        "X-Mirror-Source": ",".join(str(s.source) for s in served),
        "X-Mirror-Fetched-At": ",".join(rfc3339(s.fetched_at) or "-" for s in served),
        "X-Mirror-Update-Time": ",".join(s.update_time or "-" for s in served),
        **_as_of(as_of, one),
    }


def page_headers(source: Source, recorded_at: float | None, as_of: float | None) -> dict[str, str]:
    """Headers of a search page or an answer: where it came from (and when recorded)."""
    headers = {"X-Mirror-Source": str(source)}
    if recorded_at is not None:
        headers["X-Mirror-Recorded-At"] = rfc3339(recorded_at) or ""
    return {**headers, **_as_of(as_of, None)}


def meta(
    served: Sequence[Served],
    as_of: float | None,
    *,
    source: Source | None = None,
    recorded_at: float | None = None,
) -> dict[str, Any]:
    """A tool result's `_meta`: per document its updateTime, when this copy was fetched and
    whether it came from the store or upstream; the as-of instant; for a search or an answer,
    where the result itself came from."""
    record: dict[str, Any] = {
        "documents": [s.to_json() for s in served],
        "asOf": rfc3339(as_of),
    }
    if source is not None:
        record["source"] = str(source)
        record["recordedAt"] = rfc3339(recorded_at)
    return {META_KEY: record}
