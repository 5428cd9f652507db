"""Search use case: upstream when online (recorded for replay), else recorded pages or local FTS."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..errors import BadRequest, InvalidInput, UpstreamError
from ..models import DocumentChunk, SearchPage
from ..search import filters

if TYPE_CHECKING:
    from . import Mirror

# Upstream refuses longer queries with INVALID_ARGUMENT; so do we, before sending.
MAX_QUERY_LENGTH = 500
DEFAULT_PAGE_SIZE = 5
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A validated search: the normalised form keys recordings."""

    query: str
    page_size: int
    page_token: str | None
    filter: str | None
    node: filters.Node | None = field(compare=False, default=None)

    @property
    def key(self) -> str:
        """Stable key of this request: same words, filter, size and page, same key."""
        basis = {
            "q": " ".join(self.query.lower().split()),
            "f": self.filter,
            "n": self.page_size,
            "t": self.page_token,
        }
        return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()

    def as_dict(self) -> dict[str, object]:
        """The request's fields, for recording."""
        return {
            "query": self.query,
            "filter": self.filter,
            "page_size": self.page_size,
            "page_token": self.page_token,
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One page of hits; `source` says whether it came from upstream, a recording or the index."""

    page: SearchPage
    source: str
    warnings: list[str] = field(default_factory=list)
    recorded_at: float | None = None

    def to_api(self) -> dict[str, object]:
        """The SearchDocumentChunksResponse JSON."""
        return self.page.to_api()


def validate_query(query: str) -> str:
    """The query stripped; empty or over 500 characters is refused as upstream refuses it."""
    text = (query or "").strip()
    if not text:
        raise InvalidInput("the search query is empty", hint="give some words to search for")
    if len(text) > MAX_QUERY_LENGTH:
        raise InvalidInput(
            f"the query is {len(text)} characters; the API refuses more than {MAX_QUERY_LENGTH} "
            "(INVALID_ARGUMENT)",
            hint="shorten the query to its key words",
        )
    return text


def make_request(
    query: str, page_size: int | None, page_token: str | None, filter_text: str | None
) -> SearchRequest:
    """Validate everything about a search before anything is sent or read."""
    size = DEFAULT_PAGE_SIZE if page_size is None else page_size
    if size < 1:
        raise InvalidInput(f"page size {size} is not positive", hint="use --limit 1 to 100")
    node = filters.parse(filter_text)
    return SearchRequest(
        query=validate_query(query),
        page_size=min(size, MAX_PAGE_SIZE),  # upstream coerces larger sizes to 100
        page_token=page_token or None,
        filter=filters.to_text(node) if node is not None else None,
        node=node,
    )


def search(
    mirror: Mirror,
    request: SearchRequest,
    *,
    offline: bool,
    fetch: bool,
    prefer_recorded: bool = False,
) -> SearchResult:
    """Run a search: upstream online (falling back to recordings or the index on failure).

    `prefer_recorded`: online, a recorded page for the same request is served without asking
    upstream (a server in cache-first mode spends quota only on new questions).
    """
    warnings: list[str] = []
    if not offline and prefer_recorded and (recorded := replay(mirror, request)) is not None:
        return recorded
    if not offline:
        try:
            return _online(mirror, request, fetch=fetch)
        except BadRequest:
            raise
        except UpstreamError as exc:
            warnings.append(f"upstream search failed, answered offline instead: {exc.message}")
    result = _offline(mirror, request)
    return replace(result, warnings=warnings + result.warnings)


def _online(mirror: Mirror, request: SearchRequest, *, fetch: bool) -> SearchResult:
    upstream = mirror.upstream()
    page = upstream.search_chunks(
        request.query,
        page_size=request.page_size,
        page_token=request.page_token,
        filter=request.filter,
    )
    now = mirror.clock()
    store = mirror.store
    store.recordings.save_page(
        request.key, request.as_dict(), page, at=now, upstream=upstream.label
    )
    store.recordings.note_metadata(
        [r.document for r in page.results if r.document is not None],
        at=now,
        upstream=upstream.label,
    )
    warnings = []
    if fetch and page.results:
        report = mirror.fetch([r.parent for r in page.results])
        if report.error or report.missing:
            warnings.append(
                f"--fetch: {report.fetched} fetched, {len(report.missing)} missing"
                + (f", stopped: {report.error.message}" if report.error else "")
            )
    return SearchResult(_sourced(page, "upstream"), "upstream", warnings)


def replay(mirror: Mirror, request: SearchRequest) -> SearchResult | None:
    """The recorded upstream page for `request`, if one was recorded."""
    recorded = mirror.store.recordings.page(request.key)
    if recorded is None:
        return None
    return SearchResult(
        _sourced(recorded.page, "recorded"), "recorded", recorded_at=recorded.recorded_at
    )


def _offline(mirror: Mirror, request: SearchRequest) -> SearchResult:
    return replay(mirror, request) or SearchResult(_local(mirror, request), "local")


def _local(mirror: Mirror, request: SearchRequest) -> SearchPage:
    offset = _decode_token(request) if request.page_token else 0
    where = mirror.store.filter_clause(request.node) if request.node is not None else None
    hits = mirror.store.search_local(
        request.query, limit=request.page_size + 1, offset=offset, where=where
    )
    page_hits = hits[: request.page_size]
    cached = mirror.store.get_many(list(dict.fromkeys(h.name for h in page_hits)))
    results = tuple(
        DocumentChunk(
            parent=hit.name,
            id=hit.chunk_id,
            content=hit.text,
            document=cached[hit.name].document.basic() if hit.name in cached else None,
            relevance_score=round(hit.score, 6),
            source="local",
        )
        for hit in page_hits
    )
    more = len(hits) > request.page_size
    token = _encode_token(request, offset + request.page_size) if more else None
    return SearchPage(results, token)


def _sourced(page: SearchPage, source: str) -> SearchPage:
    return SearchPage(tuple(replace(r, source=source) for r in page.results), page.next_page_token)


def _encode_token(request: SearchRequest, offset: int) -> str:
    # The token carries the request's fingerprint so it cannot be replayed on another query.
    raw = json.dumps({"o": offset, "k": _fingerprint(request)}, separators=(",", ":"))
    return "local." + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_token(request: SearchRequest) -> int:
    token = request.page_token or ""
    try:
        if not token.startswith("local."):
            raise ValueError
        body = token[len("local.") :]
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        offset = int(data["o"])
        if data["k"] != _fingerprint(request) or offset < 0:
            raise ValueError
    except (ValueError, KeyError, TypeError):
        raise InvalidInput(
            "the page token does not belong to this query in the local index",
            hint="repeat the search without --page-token, then follow its nextPageToken",
        ) from None
    return offset


def _fingerprint(request: SearchRequest) -> str:
    basis = replace(request, page_token=None, page_size=request.page_size)
    return basis.key[:16]
