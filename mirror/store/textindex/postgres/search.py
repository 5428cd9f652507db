"""Local search on PostgreSQL: documents ranked by ts_rank over the tsvectors of search_docs,
then each document's best chunks, in the same shape and order rules as SQLite's text_search.py.

The query is planned once for both backends by mirror.search.lexical (its terms, identifiers
searched whole then by their parts, CJK bigrams, pages with every term first, topped up with
pages with any term); mirror.search.tsquery translates each FTS5 match string it produces into
a tsquery, which the GIN index on `words` answers. Ranking weights follow SQLite's bm25
weights (title 8, headings 3, description 2, body and side column 1). A `where` filter is
Core SQL joined into the same statement: PostgreSQL plans the filter and the match together,
so no candidate-widening loop is needed here.

A search joins `documents`: no entry without its document can be returned (and the foreign
key cascades deletions anyway).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

# SQLAlchemy compiles func.to_tsquery only once its PostgreSQL dialect module has registered
# the text-search functions; importing it here makes that independent of import order.
import sqlalchemy.dialects.postgresql  # noqa: F401
from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Connection,
    Select,
    String,
    bindparam,
    func,
    literal_column,
    select,
    text,
)

from ....search import lexical
from ....search.tsquery import normalized, to_tsquery
from ...schema.index import search_docs
from ...schema.pg_index import HEAD_WORDS, WORDS
from ...schema.tables import documents
from ..ranking import LONG_QUERY, MIN_SCORE, DocumentHit, LocalHit, grouped
from .index import CONFIG

# ts_rank's weights for the labels D, C, B, A: body and side column, description, headings,
# title. The ratios of SQLite's bm25 weights (1, 2, 3, 8), scaled so the title counts 1.
WEIGHTS = "{0.125, 0.25, 0.375, 1.0}"
# ts_rank normalization 32 alone: rank / (rank + 1), the score shown, in [0, 1), and no length
# normalization. Measured on tests/data/relevance.json (74 queries, hit@1 / hit@5 / MRR@10):
# 0.89 / 0.96 / 0.93 with these weights and no length normalization (as SQLite's bm25); 0.82 /
# 0.95 / 0.88 dividing by 1 + log(length) (flag 1); 0.37 / 0.69 / 0.51 by length (flag 2);
# ts_rank_cd (cover density) at best 0.73 / 0.95 / 0.81.
NORMALIZATION = 32
# Matches of at least this many pages are ranked in head_words first (FTS5 did the same on SQLite before tantivy), lower
# than SQLite's 2,000: ts_rank reads each matching page's whole tsvector from its TOAST
# table, where bm25 reads a doclist. With 500 the relevance suite is unchanged (tested with 20).
COMMON = 500
_MAX_SPELLING_CANDIDATES = 20_000

_QUERY: BindParameter[str] = bindparam("q", type_=String())
_TSQUERY = func.to_tsquery(literal_column(f"'{CONFIG}'"), _QUERY)


def _rank(column: str) -> ColumnElement[float]:
    words: ColumnElement[Any] = literal_column(f"search_docs.{column}")
    return func.ts_rank(
        literal_column(f"CAST('{WEIGHTS}' AS real[])"), words, _TSQUERY, NORMALIZATION
    ).label("r")


def _matching(column: str) -> ColumnElement[bool]:
    return literal_column(f"search_docs.{column}").op("@@")(_TSQUERY)


def _ranked(column: str) -> Select[Any]:
    s = search_docs.c
    rank = _rank(column)
    return (
        select(s.id, rank, s.name)
        .join(documents, documents.c.name == s.name)
        .where(_matching(column))
        .order_by(rank.desc(), s.name)
    )


_RANKED = {column: _ranked(column) for column in (WORDS, HEAD_WORDS)}
_COUNT = select(func.count()).select_from(
    select(search_docs.c.id).where(_matching(WORDS)).limit(bindparam("n")).subquery()
)
# Which of a query's words match no page, in one round trip: one EXISTS (a GIN lookup) each.
_MISSING = text(
    "SELECT array_agg(w.word) FROM unnest(CAST(:words AS text[]), CAST(:queries AS text[])) "
    f"AS w(word, q) WHERE NOT EXISTS (SELECT 1 FROM search_docs WHERE {WORDS} @@ "
    f"to_tsquery('{CONFIG}', w.q))"
)

RankedRow = tuple[int, float, str]


def _page(
    conn: Connection, match: str, need: int, where: ColumnElement[bool] | None
) -> list[RankedRow]:
    """The best `need` documents for FTS5 match string `match`, by (score desc, name)."""
    query = to_tsquery(match)
    if not query:
        return []
    # A common match's plan: a common word's pages are many, ranking each costs
    # a read of its tsvector; the pages naming it in title, headings or description come
    # first anyway (their weights are highest). Not for "any of" matches (a page whose title holds one of a long question's words is rarely its answer).
    tiered = where is None and " OR " not in match
    if tiered and conn.execute(_COUNT, {"q": query, "n": COMMON}).scalar_one() >= COMMON:
        rows = conn.execute(_RANKED[HEAD_WORDS].limit(need), {"q": query}).all()
        if len(rows) >= need:
            return [(r[0], float(r[1]), r[2]) for r in rows]
    ranked = _RANKED[WORDS] if where is None else _RANKED[WORDS].where(where)
    rows = conn.execute(ranked.limit(need), {"q": query}).all()
    return [(r[0], float(r[1]), r[2]) for r in rows]


def _score(rank: float) -> float:
    # NORMALIZATION's 32 already maps into [0, 1); a match never reads as "not relevant".
    return max(min(rank, 1.0), MIN_SCORE)


def rank_documents(
    conn: Connection, query: str, *, limit: int, where: ColumnElement[bool] | None = None
) -> list[DocumentHit]:
    """The lexical ranking on PostgreSQL: the best `limit` documents, best first, planned as
    text_search.rank_documents plans it (every term, then any term or part; long queries any term
    from the start; a word that matches nothing corrected from the index's vocabulary)."""
    terms = lexical.query_terms(query)
    if not terms or limit <= 0:
        return []
    terms = _correct(conn, terms)
    either = lexical.any_of(terms)
    attempts = [either] if len(terms) >= LONG_QUERY else [lexical.all_of(terms)]
    if either != attempts[0]:
        attempts.append(either)
    hits: list[DocumentHit] = []
    seen: set[str] = set()
    floor = 1.0
    for number, match in enumerate(attempts):
        if number and len(hits) >= limit:
            break
        for _, rank, name in _page(conn, match, limit + len(hits), where):
            if name in seen:
                continue
            seen.add(name)
            # A page topped up from a looser match never outranks one that had every term.
            score = min(_score(rank), floor) if number else _score(rank)
            hits.append(DocumentHit(name, -rank, score))
        if hits:
            floor = hits[-1].score
    return hits[:limit]


def search(
    conn: Connection,
    query: str,
    *,
    limit: int,
    offset: int = 0,
    where: ColumnElement[bool] | None = None,
) -> list[LocalHit]:
    """The best chunks for `query`, grouped by document: the ranking of documents, each
    followed by its best chunks (lexical.best_chunks, as on SQLite)."""
    if limit <= 0:
        return []
    offset = max(offset, 0)
    need = offset + limit
    ranking = rank_documents(conn, query, limit=need, where=where)

    def contents(names: list[str]) -> dict[str, str | None]:
        d = documents.c
        rows = conn.execute(select(d.name, d.content).where(d.name.in_(names)))
        return {name: content for name, content in rows}

    return grouped(ranking, query, need, contents)[offset:need]


# --- typo correction -----------------------------------------------------------------------------

_FINGERPRINT = text("SELECT count(*), coalesce(max(id), 0) FROM search_docs")
# Every stem of the index with the number of pages holding it (a scan of every tsvector).
_VOCABULARY = text(f"SELECT word, ndoc FROM ts_stat('SELECT {WORDS} FROM search_docs')")
_vocabularies: dict[str, tuple[tuple[int, int], list[tuple[str, int]]]] = {}
_lock = threading.Lock()


def _vocabulary(conn: Connection) -> list[tuple[str, int]]:
    """The index's stems by page count, sorted; read once per process and kept until the
    index changes (ts_stat reads every tsvector: about a second per 10,000 pages)."""
    key = str(conn.engine.url)
    row = conn.execute(_FINGERPRINT).one()
    fingerprint = (int(row[0]), int(row[1]))
    with _lock:
        cached = _vocabularies.get(key)
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    words = sorted((str(w), int(n)) for w, n in conn.execute(_VOCABULARY))
    with _lock:
        _vocabularies[key] = (fingerprint, words)
    return words


def _stem(conn: Connection, word: str) -> str:
    """`word` as the index stores it (english stem)."""
    found = conn.execute(
        text(f"SELECT strip(to_tsvector('{CONFIG}', :w))::text"), {"w": normalized(word)}
    ).scalar_one()
    stems = str(found).replace("'", " ").split()
    return stems[0] if stems else word.casefold()


def _correct(conn: Connection, terms: list[lexical.Term]) -> list[lexical.Term]:
    """The terms with each word that matches no page replaced by the closest stem of the
    index's vocabulary (1 edit apart, 2 for long stems; the most frequent wins), as
    text_search._correct does on SQLite."""
    words = [w for w in lexical.words_of(terms) if len(w) >= 4 and w.isalpha() and w.isascii()]
    if not words:
        return terms
    queries = [to_tsquery('"' + w + '"') for w in words]
    missing = conn.execute(_MISSING, {"words": words, "queries": queries}).scalar_one() or []
    vocabulary: list[tuple[str, int]] | None = None
    for word in missing:
        stemmed = _stem(conn, word.casefold())
        if vocabulary is None:
            vocabulary = _vocabulary(conn)
        better = lexical.closest(
            stemmed, _prefixed(vocabulary, stemmed[:2])[:_MAX_SPELLING_CANDIDATES]
        )
        if better is not None:
            terms = lexical.replace_word(terms, word, better)
    return terms


def _prefixed(vocabulary: Sequence[tuple[str, int]], prefix: str) -> Sequence[tuple[str, int]]:
    """The entries of sorted `vocabulary` whose word starts with `prefix`."""
    from bisect import bisect_left

    start = bisect_left(vocabulary, (prefix, -1))
    end = bisect_left(vocabulary, (prefix + "\uffff", -1))
    return vocabulary[start:end]
