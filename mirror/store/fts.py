"""Ranking local search hits in SQLite FTS5, on a plain sqlite3 connection (no SQLAlchemy).

The one implementation of local search: the full Store runs it on the DBAPI connection under
its SQLAlchemy connection (index.search), the cold-start Reader on its own sqlite3 connection.
`search` never passes user text to FTS5 as syntax: it builds the MATCH expression from the
query's words, each quoted as an FTS5 string. A `where` filter is SQL only the Store can
build, so it comes in as a `Filtered` strategy.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .sql import FTS_TABLE

# bm25 weights per FTS column (title, description, heading, body). Title and description are
# repeated on every chunk row, so a page whose title names the query ranks its chunks first.
WEIGHTS = (10.0, 4.0, 3.0, 1.0)
# score = s / (s + SCORE_K) with s = -bm25: monotonic, in [0, 1), 0.5 where s == SCORE_K.
SCORE_K = 10.0

# Long queries cost one doclist per term; beyond this many words they add little.
MAX_TERMS = 32
MAX_QUERY_CHARS = 4096
MAX_TERM_CHARS = 64
# SQLite's default limit on bound parameters is 32766 (since 3.32); batches stay far below.
BATCH = 500
# How many candidates the ranked FTS pass fetches before a `where` filter, at most, before
# the search falls back to filtering every match in one SQL statement.
_MAX_CANDIDATES = 4000

# Words that match nearly every chunk: dropped from a query that has other words, so
# "how do I migrate my extension" ranks by "migrate" and "extension" (and AND still finds it).
# fmt: off
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "should", "so", "that",
    "the", "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with",
    "you", "your",
))
# fmt: on

RANK = "bm25({table}, {w})".format(table=FTS_TABLE, w=", ".join(map(str, WEIGHTS)))
_TOP = f"SELECT rowid, {RANK} AS r FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH ? ORDER BY r LIMIT ?"
_BODIES = f"SELECT rowid, body FROM {FTS_TABLE} WHERE rowid IN ({{marks}})"
_BY_IDS = "SELECT id, name, chunk_id, ordinal, heading FROM chunks WHERE id IN ({marks})"

# (id, name, chunk_id, ordinal, heading) of a chunk; with its rank after the id for `best`.
ChunkRow = tuple[int, str, str, int, "str | None"]
RankedRow = tuple[int, float, str, str, int, "str | None"]


class Filtered(Protocol):
    """A `where` filter on the documents, as the SQL that only the full Store can build."""

    def rows(self, ids: Sequence[int]) -> Iterable[ChunkRow]:
        """The chunks among `ids` whose documents pass the filter."""

    def best(self, match: str, need: int) -> Iterable[RankedRow]:
        """The best `need` matches of `match` that pass the filter, by (rank, name, ordinal)."""


@dataclass(frozen=True, slots=True)
class LocalHit:
    """One chunk found by local search, with its score in [0, 1] (higher is better).

    No snippet: the shells cut one from `text` (mirror.snippets), the same way for local,
    recorded and upstream results; cutting it here cost 40% of a typical search.
    """

    name: str
    chunk_id: str
    heading: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class _Candidate:
    rowid: int
    rank: float
    name: str
    chunk_id: str
    ordinal: int
    heading: str

    def key(self) -> tuple[float, str, int]:
        return (self.rank, self.name, self.ordinal)


def _is_word_char(char: str) -> bool:
    # Letters, digits and combining marks (Devanagari vowel signs, decomposed accents), which
    # FTS5's unicode61 keeps inside tokens; `_` splits tokens there but joins a phrase here.
    return char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M"


_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")


def _words(token: str) -> list[str]:
    if token.isascii():
        return _ASCII_WORD.findall(token)
    words: list[str] = []
    current: list[str] = []
    for char in (*token, " "):
        if _is_word_char(char):
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    return words


def query_terms(query: str) -> list[str]:
    """The terms of a user query: its words, with words joined by punctuation (`tf.function`,
    `service_worker`) kept together as one phrase; deduplicated, stopwords dropped if others
    remain. Only word characters and spaces survive, so no term can be FTS5 syntax."""
    text = unicodedata.normalize("NFC", query[:MAX_QUERY_CHARS])
    seen: dict[str, str] = {}
    for token in text.split():
        words = [w[:MAX_TERM_CHARS] for w in _words(token)]
        if words:
            term = " ".join(words)
            seen.setdefault(term.casefold(), term)
    terms = list(seen.values())
    content = [t for t in terms if t.casefold() not in STOPWORDS]
    return (content or terms)[:MAX_TERMS]


def match_expression(terms: Sequence[str], operator: str) -> str:
    """An FTS5 query joining `terms` with AND or OR, each quoted as an FTS5 string (a phrase)."""
    if operator not in ("AND", "OR"):
        raise ValueError(f"operator must be AND or OR, not {operator!r}")
    return f" {operator} ".join('"' + term.replace('"', '""') + '"' for term in terms)


def _attempts(terms: list[str]) -> list[str]:
    """MATCH expressions to try in turn: every term, then any term, then any single word."""
    out = [match_expression(terms, "AND")]
    if len(terms) > 1:
        out.append(match_expression(terms, "OR"))
    words = list(dict.fromkeys(w for t in terms for w in t.split()))
    if len(words) > len(terms):
        out.append(match_expression(words, "OR"))
    return out


def _candidates(
    raw: Any, match: str, count: int, where: Filtered | None
) -> tuple[list[_Candidate], float | None]:
    """The best `count` matches by rank that pass `where`, sorted, and the rank of the last
    match fetched (None when every match was fetched)."""
    # Rank in FTS alone first: joining every match to chunks before the LIMIT would cost a
    # lookup per match, and most queries need only the top few.
    top = raw.execute(_TOP, (match, count)).fetchall()
    ranks = dict(top)
    found: list[_Candidate] = []
    ids = list(ranks)
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        rows: Iterable[Any]
        if where is None:
            rows = raw.execute(_BY_IDS.format(marks=", ".join("?" * len(batch))), batch)
        else:
            rows = where.rows(batch)
        found.extend(
            _Candidate(rowid, ranks[rowid], name, chunk_id, ordinal, heading or "")
            for rowid, name, chunk_id, ordinal, heading in rows
        )
    found.sort(key=_Candidate.key)
    return found, (top[-1][1] if len(top) == count else None)


def _page(raw: Any, match: str, need: int, where: Filtered | None) -> list[_Candidate]:
    """The first `need` matches in (rank, name, ordinal) order."""
    count = need + 1
    while True:
        found, boundary = _candidates(raw, match, count, where)
        # Unfetched matches rank >= boundary: the page is final once its last row ranks
        # strictly better (a tie could sort before it by name).
        if boundary is None or (len(found) >= need and found[need - 1].rank < boundary):
            return found[:need]
        if count >= _MAX_CANDIDATES:
            break
        count *= 4
    if where is None:
        return found[:need]  # thousands of exact ties: keep FTS's order among them
    # A selective filter: rank every match that passes it instead of widening further.
    return [_Candidate(*row[:5], row[5] or "") for row in where.best(match, need)]


def search(
    raw: Any, query: str, *, limit: int, offset: int = 0, where: Filtered | None = None
) -> list[LocalHit]:
    """The best chunks for `query` on sqlite3 connection `raw`: those with all its terms (AND),
    or else any (OR). The caller holds one read transaction around it (one snapshot)."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    offset = max(offset, 0)
    page: list[_Candidate] = []
    # Only when the stricter attempt finds nothing at all: filling a short AND page from the
    # OR attempt measured 2x slower at p99 (an OR of common words ranks most of the index).
    for match in _attempts(terms):
        page = _page(raw, match, offset + limit, where)
        if page:
            break
    page = page[offset:]
    if not page:
        return []
    # Bodies by rowid (no MATCH): FTS5's snippet() would re-run the query per hit.
    marks = ", ".join("?" * len(page))
    bodies = dict(raw.execute(_BODIES.format(marks=marks), [c.rowid for c in page]))
    hits: list[LocalHit] = []
    for cand in page:
        body = bodies.get(cand.rowid)
        if body is not None:  # always there: same snapshot as the ranking
            s = max(-cand.rank, 0.0)
            hits.append(LocalHit(cand.name, cand.chunk_id, cand.heading, body, s / (s + SCORE_K)))
    return hits
