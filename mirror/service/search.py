"""Search use case: upstream when online (recorded for replay), else recorded pages or local FTS."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import limits
from ..config import ENV_API_KEY
from ..errors import AuthError, InvalidInput, MirrorError, MissingApiKey, QuotaExceeded, Unavailable
from ..models import DocumentChunk, SearchPage, Source, rfc3339
from ..policy import Mode
from . import documents
from .context import Context
from .ranking import local_ranking

if TYPE_CHECKING:
    from ..models import CachedDocument
    from ..search import filters
    from ..store.api import StoreReads
    from ..store.textindex.ranking import DocumentHit

log = logging.getLogger(__name__)

# Page tokens the local index gives out start with this; upstream's never do.
LOCAL_TOKEN = "local."


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
    source: Source
    warnings: list[str] = field(default_factory=list)
    recorded_at: float | None = None
    as_of: float | None = None  # an as-of read: the instant the store was searched as of

    def to_api(self) -> dict[str, object]:
        """The SearchDocumentChunksResponse JSON."""
        return self.page.to_api()

    def to_json(self, held: Sequence[documents.Served] = ()) -> dict[str, object]:
        """`search --json`: the upstream JSON, plus where it came from under `_mirror`, with
        the store's copy of each page hit (`held`: Mirror.provenance)."""
        return {
            **self.page.to_api(),
            "_mirror": {
                "source": str(self.source),
                "recordedAt": rfc3339(self.recorded_at),
                "asOf": rfc3339(self.as_of),
                "documents": [s.to_json() for s in held],
            },
        }


def make_request(
    query: str, page_size: int | None, page_token: str | None, filter_text: str | None
) -> SearchRequest:
    """Validate everything about a search before anything is sent or read."""
    canonical = node = None
    if filter_text is not None:
        # Imported only for a filter: the grammar is most of a cold unfiltered search's imports.
        from ..search import filters

        node = filters.parse(filter_text)
        canonical = filters.to_text(node) if node is not None else None
    return SearchRequest(
        query=limits.check_query(query, what="search query"),
        page_size=limits.page_size(page_size),
        page_token=page_token or None,
        filter=canonical,
        node=node,
    )


# Failures a later call may not repeat: only these fall back to recordings or the local
# index. A bad key, a disabled API or a refused request would fail again and must be seen.
TRANSIENT = (Unavailable, QuotaExceeded)


def why_local(ctx: Context, exc: MirrorError) -> str | None:
    """Why a search or answer that could not go upstream may be answered from the store
    instead (no key set, upstream down or over quota), or None when the failure must be seen
    (a key that is set but wrong, a disabled API, a refused request)."""
    if isinstance(exc, MissingApiKey) or (isinstance(exc, AuthError) and not ctx.settings.api_key):
        # The README's promise: a store without a key still searches and answers locally.
        return f"no API key ({ENV_API_KEY} is not set)"
    if isinstance(exc, TRANSIENT):
        return f"upstream failed ({exc.message})"
    return None


def check_fetch(mode: Mode, fetch: bool) -> None:
    """Refuse --fetch in offline mode (before the store is even opened)."""
    if fetch and mode.offline:
        raise InvalidInput(
            "--fetch needs the network, and offline mode is on",
            hint="drop --fetch to search the store only, or drop --offline to mirror the hits",
        )


def search(ctx: Context, request: SearchRequest, mode: Mode, *, fetch: bool) -> SearchResult:
    """Run a search: upstream online (falling back to recordings or the index when upstream
    is down or over quota); a page token from the local index keeps paging the local index.

    `mode.prefer_recorded`: online, a recorded page for the same request is served without
    asking upstream (a server in cache-first mode spends quota only on new questions).
    """
    check_fetch(mode, fetch)
    warnings: list[str] = []
    local_token = bool(request.page_token and request.page_token.startswith(LOCAL_TOKEN))
    if not mode.offline and mode.prefer_recorded:
        recorded = replay(ctx, request)
        if recorded is not None:
            return recorded
    if not mode.offline and not local_token:
        try:
            return _online(ctx, request, fetch=fetch)
        except MirrorError as exc:
            reason = why_local(ctx, exc)
            if reason is None:
                raise
            warnings.append(
                f"{reason}: answered from the local store instead"
                + ("; --fetch fetched nothing" if fetch else "")
            )
    result = _offline(ctx, request)
    return replace(result, warnings=warnings + result.warnings)


def _online(ctx: Context, request: SearchRequest, *, fetch: bool) -> SearchResult:
    upstream = ctx.upstream()
    page = upstream.search_chunks(
        request.query,
        page_size=request.page_size,
        page_token=request.page_token,
        filter=request.filter,
    )
    now = ctx.clock()
    store = ctx.store
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
        report = documents.fetch(ctx, [r.parent for r in page.results], ctx.default_mode())
        if report.error or report.missing:
            warnings.append(
                f"--fetch: {report.fetched} fetched, {len(report.missing)} missing"
                + (f", stopped: {report.error.message}" if report.error else "")
            )
    return SearchResult(_sourced(page, Source.UPSTREAM), Source.UPSTREAM, warnings)


def replay(ctx: Context, request: SearchRequest) -> SearchResult | None:
    """The recorded upstream page for `request`, if one was recorded."""
    recorded = ctx.store.recordings.page(request.key)
    if recorded is None:
        return None
    return SearchResult(
        _sourced(recorded.page, Source.RECORDED), Source.RECORDED, recorded_at=recorded.recorded_at
    )


def _offline(ctx: Context, request: SearchRequest) -> SearchResult:
    return replay(ctx, request) or SearchResult(_local(ctx, request), Source.LOCAL, as_of=ctx.as_of)


def grouped_page(
    ctx: Context,
    query: str,
    ranking: list[DocumentHit],
    *,
    offset: int,
    size: int,
    read: dict[str, CachedDocument] | None = None,
) -> tuple[list[DocumentChunk], bool]:
    """Results `offset` to `offset + size` of a document ranking as chunks, grouped by document:
    each document's best chunks (at most lexical.PER_DOCUMENT), its best first; and whether more
    follow. A document gone from the store since it was ranked is skipped. `read`: documents
    read already (ranking.local_ranking fills it), not read again; what this reads is added."""
    from ..search import lexical

    need = offset + size + 1  # one more, to know whether a next page exists
    results: list[DocumentChunk] = []
    done = 0
    while len(results) < need and done < len(ranking):
        # A few documents at a time: most pages are filled by the first few.
        group = ranking[done : done + max(2, (need - len(results) + 1) // 2)]
        done += len(group)
        known = {} if read is None else read
        cached = {hit.name: known[hit.name] for hit in group if hit.name in known}
        missing = [hit.name for hit in group if hit.name not in known]
        if missing:
            cached.update(fetched := ctx.store.get_many(missing))
            known.update(fetched)
        shown = [hit for hit in group if hit.name in cached and cached[hit.name].document.content]
        contents = [cached[hit.name].document.content or "" for hit in shown]
        for hit, chunks in zip(shown, lexical.best_chunks(contents, query), strict=True):
            basic = cached[hit.name].document.basic()
            results.extend(
                DocumentChunk(
                    parent=hit.name,
                    id=chunk.id,
                    content=chunk.text,
                    document=basic,
                    relevance_score=round(hit.score, 6),
                    source=Source.LOCAL,
                )
                for chunk in chunks
            )
    return results[offset : offset + size], len(results) > offset + size


# Control characters (C0 but line breaks and tabs, DEL, C1) never reach a snippet: a terminal
# would act on them. Line breaks stay until plain_text has read the Markdown's lines.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def snippets(
    store: StoreReads,
    query: str,
    contents: Sequence[str],
    parents: Sequence[str] | None = None,
) -> list[list[tuple[str, bool]]]:
    """The snippet of each chunk text of a page of results, as (segment, marked) pairs on
    one line: the chunk as prose (no fence info strings, headings set off, no control
    characters, a shortcut reference link to a label its page defines as its text: `parents`,
    each chunk's page), cut around the query's words by the store's own machinery where it
    has one (ts_headline on PostgreSQL, one statement for the page), else by best_window."""
    from ..search.snippets import best_window, plain_text

    labels = _page_labels(store, contents, parents)
    shown = [
        plain_text(_CONTROL.sub(" ", content), labels.get(parent, frozenset()))
        for content, parent in zip(contents, parents or [""] * len(contents), strict=True)
    ]
    found = store.headlines(query, shown) if shown else None
    return found if found is not None else [best_window(text, query) for text in shown]


def _page_labels(
    store: StoreReads, contents: Sequence[str], parents: Sequence[str] | None
) -> dict[str, frozenset[str]]:
    """The link labels each page defines (`[label]: url`, most often at its end, far from the
    chunk), read only for the pages of chunks that may use one; a page the store does not
    hold (an upstream result) defines none."""
    from ..search.snippets import link_labels, may_hold_shortcuts

    if parents is None:
        return {}
    wanted = list(
        dict.fromkeys(p for c, p in zip(contents, parents, strict=True) if may_hold_shortcuts(c))
    )
    if not wanted:
        return {}
    held = store.get_many(wanted)
    return {name: link_labels(held[name].document.content or "") for name in held}


def local_need(request: SearchRequest) -> int:
    """How many documents the local ranking of `request` needs: up to the end of its page,
    and one more to know whether a next page exists."""
    offset = _decode_token(request) if request.page_token else 0
    return offset + request.page_size + 1


def _local(ctx: Context, request: SearchRequest) -> SearchPage:
    offset = _decode_token(request) if request.page_token else 0
    need = local_need(request)
    # Every document gives at least one chunk, so this many documents always fill the page.
    read: dict[str, CachedDocument] = {}
    ranking = local_ranking(ctx, request.query, limit=need, node=request.node, read=read)
    size = request.page_size
    # One chunk past the page: whether another page follows, and whether the page would end
    # between a document's two chunks. It then ends before that document, which opens the
    # next page whole: a page of results never shows again a document the previous one
    # showed (a page of one chunk cannot help it).
    results, _ = grouped_page(ctx, request.query, ranking, offset=offset, size=size + 1, read=read)
    more = len(results) > size
    if more and size > 1 and results[size].parent == results[size - 1].parent:
        size -= 1
    token = _encode_token(request, offset + size) if more else None
    return SearchPage(tuple(results[:size]), token)


def _sourced(page: SearchPage, source: Source) -> SearchPage:
    return SearchPage(tuple(replace(r, source=source) for r in page.results), page.next_page_token)


def _encode_token(request: SearchRequest, offset: int) -> str:
    # The token carries the request's fingerprint so it cannot be replayed on another query.
    raw = json.dumps({"o": offset, "k": _fingerprint(request)}, separators=(",", ":"))
    return LOCAL_TOKEN + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_token(request: SearchRequest) -> int:
    token = request.page_token or ""
    hint = "repeat the search without --page-token, then pass the nextPageToken it prints"
    if not token.startswith(LOCAL_TOKEN):
        raise InvalidInput(
            f"page token {token[:40]!r} is not one the local index gave out "
            "(tokens from upstream page only upstream)",
            hint=hint,
        )
    try:
        body = token[len(LOCAL_TOKEN) :]
        data = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
        offset = data["o"]
        valid = isinstance(offset, int) and offset >= 0 and data["k"] == _fingerprint(request)
    except (ValueError, KeyError, TypeError, OverflowError):
        # binascii.Error and UnicodeDecodeError are ValueErrors; 1e999 decodes to inf.
        valid = False
    if not valid:
        raise InvalidInput(
            "the page token is damaged or belongs to another query or filter", hint=hint
        )
    return int(offset)


def _fingerprint(request: SearchRequest) -> str:
    basis = replace(request, page_token=None, page_size=request.page_size)
    return basis.key[:16]
