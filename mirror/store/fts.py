"""Local search in SQLite FTS5, on a plain sqlite3 connection (no SQLAlchemy): documents ranked
by BM25, then each document's best chunks.

The one implementation of local search: the full Store runs it on the DBAPI connection under
its SQLAlchemy connection (index.search), the cold-start Reader on its own sqlite3 connection.
User text is never FTS5 syntax (mirror.search.lexical quotes every term). A `where` filter is
SQL only the Store can build, so it comes in as a `Filtered` strategy.

Two steps, so a page never crowds the results and a common word never costs a scan of every
chunk: (1) documents are ranked in `doc_fts`, one row per document (title, description,
headings, body, side column), pages with every term first, topped up with pages with any term;
(2) only the documents shown are cut into chunks again (the chunker is deterministic) and
their chunks scored (mirror.search.lexical.best_chunks), keeping each page's best
PER_DOCUMENT chunks, the best first.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..search import lexical, translations
from . import fts_vocabulary
from .compression import inflate
from .sql import FTS_TABLE, HEAD_TABLE

# bm25 weights per doc_fts column (title, description, heading lines, body, side column).
WEIGHTS = (8.0, 2.0, 3.0, 1.0, 1.0)
# score = s / (s + SCORE_K) with s = -bm25: monotonic, in [0, 1), 0.5 where s == SCORE_K.
SCORE_K = 10.0
TOKENIZER = "porter unicode61 remove_diacritics 2"
# Queries of this many terms or more rank pages with any term by BM25 from the start: pages
# with every word of a long question are few and often only mention each in passing.
LONG_QUERY = 4
# SQLite's default limit on bound parameters is 32766 (since 3.32); batches stay far below.
BATCH = 500
# How many candidates the ranked FTS pass fetches before a `where` filter, at most, before
# the search falls back to filtering every match in one SQL statement.
_MAX_CANDIDATES = 4000
# Typo correction looks at vocabulary terms sharing the first two letters, at most this many.
_MAX_SPELLING_CANDIDATES = 20_000

RANK = "bm25({table}, {w})".format(table=FTS_TABLE, w=", ".join(map(str, WEIGHTS)))
_TOP = f"SELECT rowid, {RANK} AS r FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY r LIMIT ?"
# The first tier for a common match (at least COMMON pages): BM25 costs a call per matching
# page, and a common word's doclist in doc_fts spans most of the store (152 ms p99 at 50,000
# documents when every chunk was ranked). Its doclist in head_fts (title, description,
# headings) is a small part of that, its doclist among titles alone smaller still, and a page
# that names the word there is the one BM25 ranks first anyway (title and headings weigh
# most); only when fewer than a page of those match does the search rank every match.
COMMON = 2000
# A term in this share of the pages or more is left out of a long question's "any term" match.
COMMON_SHARE = 0.25
SAMPLES = 2
SAMPLE_ROWS = 2000
# A store of fewer pages ranks every "any term" match whole (sampling would cost more).
SAMPLED_FROM = SAMPLES * COMMON
# Two subqueries, each one seek at an end of the rowid b-tree: `SELECT min(id), max(id)` in
# one query scans the whole table (8 ms of a long question's 40 at 50,000 pages).
_ROWID_RANGE = "SELECT (SELECT min(id) FROM search_docs), (SELECT max(id) FROM search_docs)"
_IN_WINDOW = f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? AND rowid BETWEEN ? AND ?"
HEAD_RANK = f"bm25({HEAD_TABLE}, {WEIGHTS[0]}, {WEIGHTS[1]}, {WEIGHTS[2]})"
_HEAD_TOP = (
    f"SELECT rowid, {HEAD_RANK} AS r FROM {HEAD_TABLE} WHERE {HEAD_TABLE} MATCH ? "
    "ORDER BY r LIMIT ?"
)
# Counting stops at COMMON: rowid order, no ranking, a prefix of the doclists.
_COMMON = f"SELECT count(*) FROM (SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT ?)"
_EXISTS = f"SELECT 1 FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? LIMIT 1"
_BY_IDS = "SELECT id, name FROM search_docs WHERE id IN ({marks})"
_CONTENT = "SELECT name, content FROM documents WHERE name IN ({marks})"
_IDS = "SELECT name, id FROM search_docs WHERE name IN ({marks})"
_HOLDING = f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? AND rowid IN ({{marks}})"

# (id, name) of an indexed document; with its rank after the id for `best`.
DocRow = tuple[int, str]
RankedRow = tuple[int, float, str]


class Filtered(Protocol):
    """A `where` filter on the documents, as the SQL that only the full Store can build."""

    def rows(self, ids: Sequence[int]) -> Iterable[DocRow]:
        """The indexed documents among `ids` that pass the filter."""

    def best(self, match: str, need: int) -> Iterable[RankedRow]:
        """The best `need` matches of `match` that pass the filter, by (rank, name)."""


@dataclass(frozen=True, slots=True)
class LocalHit:
    """One chunk found by local search, with its score in [0, 1] (higher is better).

    No snippet: the shells ask for a page's snippets (Mirror.snippets, cut from the text shown)
    once it is known, the same way for local, recorded and upstream results.
    """

    name: str
    chunk_id: str
    heading: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class DocumentHit:
    """One document in the lexical ranking: its name, BM25 rank (lower is better) and score."""

    name: str
    rank: float
    score: float


# The least score a match gets: BM25 is near 0 for a word in most pages of a small store, and
# a hit with relevanceScore 0 would read as "not relevant" (upstream's are in (0, 1]).
MIN_SCORE = 1e-6


def _score(rank: float) -> float:
    s = max(-rank, 0.0)
    return max(s / (s + SCORE_K), MIN_SCORE)


def _candidates(
    raw: Any, match: str, count: int, where: Filtered | None, top_sql: str = _TOP
) -> tuple[list[RankedRow], float | None]:
    """The best `count` matches by rank that pass `where`, sorted by (rank, name), and the rank
    of the last match fetched (None when every match was fetched)."""
    top = raw.execute(top_sql, (match, count)).fetchall()
    ranks = dict(top)
    found: list[RankedRow] = []
    ids = list(ranks)
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        rows: Iterable[Any]
        if where is None:
            rows = raw.execute(_BY_IDS.format(marks=", ".join("?" * len(batch))), batch)
        else:
            rows = where.rows(batch)
        # Ids with no search_docs row (left by a write that bypassed the triggers) drop out
        # here: a search never returns a document that is not in the store.
        found.extend((rowid, ranks[rowid], name) for rowid, name in rows)
    found.sort(key=lambda row: (row[1], row[2]))
    return found, (top[-1][1] if len(top) == count else None)


def _page(
    raw: Any, match: str, need: int, where: Filtered | None, *, tiered: bool
) -> list[RankedRow]:
    """The first `need` documents matching `match` in (rank, name) order (a common match, if
    `tiered`: those that match in head_fts, when they fill the page)."""
    # Callers pass `tiered` False for "any of" matches: a page whose title holds one of a
    # long question's words is rarely its answer (on the 2,774-page corpus, paraphrased
    # questions fell from 0.79 to 0.54 hit@5 when they took this path), unless every term is
    # common (_rare_alternatives).
    if tiered and where is None and raw.execute(_COMMON, (match, COMMON)).fetchone()[0] >= COMMON:
        # Title alone first (a few thousand pages at most for the commonest word at 50,000
        # documents), then title, description and headings.
        for tier in ("{title} : (" + match + ")", match):
            found, _ = _candidates(raw, tier, need, None, _HEAD_TOP)
            if len(found) >= need:
                return found
    count = need + 1
    while True:
        found, boundary = _candidates(raw, match, count, where)
        # Unfetched matches rank >= boundary: the page is final once its last row ranks
        # strictly better (a tie could sort before it by name).
        if boundary is None or (len(found) >= need and found[need - 1][1] < boundary):
            return found[:need]
        if count >= _MAX_CANDIDATES:
            break
        count *= 4
    if where is None:
        return found[:need]  # thousands of exact ties: keep FTS's order among them
    # A selective filter: rank every match that passes it instead of widening further.
    return [(rowid, rank, name) for rowid, rank, name in where.best(match, need)]


_STEMMER = threading.local()


def stem(word: str) -> str:
    """`word` as the index's tokenizer stores it (Porter stem, folded), read back from FTS5
    itself (an in-memory table per thread), so typo correction compares like with like."""
    conn: sqlite3.Connection | None = getattr(_STEMMER, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:")
        conn.execute(f"CREATE VIRTUAL TABLE s USING fts5(x, tokenize = '{TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'row')")
        _STEMMER.conn = conn
    conn.execute("DELETE FROM s")
    conn.execute("INSERT INTO s VALUES (?)", (word,))
    row = conn.execute("SELECT term FROM v LIMIT 1").fetchone()
    return str(row[0]) if row else word.casefold()


def _correct(raw: Any, terms: list[lexical.Term]) -> list[lexical.Term]:
    """The terms with each word that matches no page replaced by the closest term of the
    index's vocabulary (stems 1 edit apart, 2 for long ones; the most frequent wins)."""
    for word in lexical.words_of(terms):
        folded = word.casefold()
        if len(folded) < 4 or not folded.isalpha() or not folded.isascii():
            continue
        if raw.execute(_EXISTS, ('"' + word + '"',)).fetchone():
            continue
        stemmed = stem(folded)
        limit = 1 if len(stemmed) < 6 else 2
        best: tuple[int, int, str] | None = None
        for term, docs in fts_vocabulary.terms_from(raw, stemmed[:2], _MAX_SPELLING_CANDIDATES):
            if abs(len(term) - len(stemmed)) > limit:
                continue  # the distance's first test, without a call per term
            distance = lexical.edit_distance(stemmed, term, limit)
            if distance <= limit and (best is None or (distance, -docs) < best[:2]):
                best = (distance, -docs, term)
        if best is not None:
            terms = lexical.replace_word(terms, word, best[2])
    return terms


def _rare_alternatives(raw: Any, terms: list[lexical.Term]) -> tuple[str, bool]:
    """The "any term" match without the terms found in COMMON_SHARE of the pages or more,
    when a rarer one remains; and whether every term is that common.

    Ranking an "any term" match costs a BM25 call per matching page: with a long question's
    common words that is most of the store (1.1 s at p50 for 10 to 18 words at 50,000
    synthetic documents, under load). A term in a quarter of the pages adds little to BM25
    (IDF log 3 or less, against 4 or more for a word in one page of 50), so the rarer terms
    choose the pages. Cutting deeper (every term in 4% of the pages, or the rarest while
    together they match at most a quarter) cost paraphrased questions hit@5 with this plan
    forced on the suite (tests/test_relevance.py). When every term is that common, the tiered
    plan of a common match (titles first) applies. A small store ranks every match."""
    exprs = lexical.alternatives(terms)
    whole = " OR ".join(exprs)
    low, high = raw.execute(_ROWID_RANGE).fetchone()
    if len(exprs) < 2 or low is None or high - low + 1 < SAMPLED_FROM:
        return whole, False
    rare = [e for e in exprs if _share(raw, e, low, high) < COMMON_SHARE]
    return (" OR ".join(rare), False) if rare else (whole, True)


def _share(raw: Any, match: str, low: int, high: int) -> float:
    """About what share of the pages match: counted in SAMPLES windows of rowids spread over
    the index (SAMPLE_ROWS rowids in all; a range seek each, no ranking)."""
    step = (high - low + 1) // SAMPLES
    width = min(SAMPLE_ROWS // SAMPLES, step)
    found = 0
    for start in range(low, low + step * SAMPLES, step):
        found += raw.execute(_IN_WINDOW, (match, start, start + width - 1)).fetchone()[0]
    return found / (width * SAMPLES)


def rank_documents(
    raw: Any, query: str, *, limit: int, where: Filtered | None = None
) -> list[DocumentHit]:
    """The lexical ranking: the best `limit` documents for `query`, best first. Pages with all
    the terms first, then (when those are fewer than `limit`) pages with any term or any part of
    one; a long query ranks pages with any term from the start. A word that matches nothing is
    corrected from the index's vocabulary first."""
    terms = lexical.query_terms(query)
    if not terms or limit <= 0:
        return []
    terms = _correct(raw, terms)
    hits: list[DocumentHit] = []
    seen: set[str] = set()
    either: tuple[str, bool] | None = None  # counting what is rare costs: only when needed
    if len(terms) >= LONG_QUERY:
        either = _rare_alternatives(raw, terms)
        _add(hits, seen, _page(raw, either[0], limit, where, tiered=either[1]), floor=None)
    else:
        everything = lexical.all_of(terms)
        _add(hits, seen, _page(raw, everything, limit, where, tiered=True), floor=None)
        if len(hits) < limit:
            either = _rare_alternatives(raw, terms)
            if either[0] != everything:
                floor = hits[-1].score if hits else 1.0
                rows = _page(raw, either[0], limit + len(hits), where, tiered=either[1])
                _add(hits, seen, rows, floor=floor)
    every_term = lexical.any_of(terms)
    if len(hits) < limit and either is not None and either[0] != every_term:
        # The rarer terms' pages are too few: the common terms' pages follow them.
        floor = hits[-1].score if hits else 1.0
        rows = _page(raw, every_term, limit + len(hits), where, tiered=True)
        _add(hits, seen, rows, floor=floor)
    return _untranslated_first(raw, hits[:limit], terms)


def _add(
    hits: list[DocumentHit], seen: set[str], rows: list[RankedRow], *, floor: float | None
) -> None:
    """Append the rows not seen yet; a page topped up from a looser match (`floor`: the
    score of the last page before it) never outranks one that had every term."""
    for _, rank, name in rows:
        if name not in seen:
            seen.add(name)
            score = _score(rank) if floor is None else min(_score(rank), floor)
            hits.append(DocumentHit(name, rank, score))


def _untranslated_first(
    raw: Any, hits: list[DocumentHit], terms: list[lexical.Term]
) -> list[DocumentHit]:
    """`hits` with untranslated pages ahead of translations that hold no more of the query's
    terms (mirror.search.translations says why). Costs nothing without a translation."""
    if not any(translations.is_translation(h.name) for h in hits):
        return hits
    names = [h.name for h in hits]
    marks = ", ".join("?" * len(names))
    rowids = dict(raw.execute(_IDS.format(marks=marks), names).fetchall())
    by_rowid = {rowid: name for name, rowid in rowids.items()}
    held = dict.fromkeys(names, 0)
    holding = _HOLDING.format(marks=", ".join("?" * len(rowids)))
    for term in terms:
        found = raw.execute(holding, [term.expr, *rowids.values()])
        for (rowid,) in found:
            held[by_rowid[rowid]] += 1
    ordered = translations.untranslated_first(hits, lambda h: h.name, held)
    # Positions keep their ranks and scores: the list stays best first whatever moved.
    return [
        DocumentHit(hit.name, place.rank, place.score)
        for hit, place in zip(ordered, hits, strict=True)
    ]


def grouped(
    documents: Sequence[DocumentHit],
    query: str,
    need: int,
    contents: Callable[[list[str]], dict[str, str | None]],
) -> list[LocalHit]:
    """The first `need` chunks of a document ranking, grouped by document: each followed by
    its best chunks (lexical.best_chunks). `contents` reads the Markdown of some names (each
    backend its own way); a name without content is skipped."""
    hits: list[LocalHit] = []
    done = 0
    while len(hits) < need and done < len(documents):
        # A few documents at a time: most pages are filled by the first few.
        group = documents[done : done + max(2, (need - len(hits) + 1) // 2)]
        done += len(group)
        found = contents([d.name for d in group])
        shown = [d for d in group if found.get(d.name)]
        chunks = lexical.best_chunks([found[d.name] or "" for d in shown], query)
        for doc, best in zip(shown, chunks, strict=True):
            hits.extend(LocalHit(doc.name, c.id, c.heading, c.text, doc.score) for c in best)
    return hits


def search(
    raw: Any, query: str, *, limit: int, offset: int = 0, where: Filtered | None = None
) -> list[LocalHit]:
    """The best chunks for `query` on sqlite3 connection `raw`, grouped by document: the
    lexical ranking of documents, each followed by its best chunks. The caller holds one
    read transaction around it (one snapshot)."""
    if limit <= 0:
        return []
    offset = max(offset, 0)
    need = offset + limit
    # Every document gives at least one chunk: `need` documents always fill the page.
    documents = rank_documents(raw, query, limit=need, where=where)

    def contents(names: list[str]) -> dict[str, str | None]:
        marks = ", ".join("?" * len(names))
        rows = raw.execute(_CONTENT.format(marks=marks), names).fetchall()
        return {name: inflate(content) for name, content in rows}

    return grouped(documents, query, need, contents)[offset:need]
