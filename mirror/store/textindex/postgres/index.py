"""The local search index on PostgreSQL: write, check and rebuild the tsvectors of search_docs.

The counterpart of index.py's FTS5 writes (schema_pg_index.py describes the columns). Each
document's text is cut by mirror.search.tsquery.normalized in Python, the same code that cuts
queries, then stemmed and weighted by PostgreSQL (`to_tsvector('english', ...)`, `setweight`)
in the statement that writes the row: no copy of the text is stored, only its tsvectors and,
as on SQLite, the heading lines and side column. A batch of documents is one statement
(unnest of arrays), inside the writer's transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, TextClause, select, text

from ....models import Document
from ....search import lexical
from ....search.chunking import headings
from ....search.tsquery import normalized
from ...schema.pg_index import HEAD_WORDS, WORDS
from ...schema.tables import documents

# The text search configuration: Snowball English stemming and stopwords, built in.
CONFIG = "english"
BATCH = 200
# Columns of one index row as the statements unnest them: stored (name, heading lines, side
# column as on SQLite) and cut for the tsvectors (title, heading lines, description, body, side).
_FIELDS = ("name", "headings", "side", "n_title", "n_headings", "n_description", "n_body", "n_side")
_ROWS = "unnest({arrays}) AS x({fields})".format(
    arrays=", ".join(f"CAST(:{f} AS text[])" for f in _FIELDS), fields=", ".join(_FIELDS)
)
_HEAD = (
    f"setweight(to_tsvector('{CONFIG}', x.n_title), 'A') || "
    f"setweight(to_tsvector('{CONFIG}', x.n_headings), 'B') || "
    f"setweight(to_tsvector('{CONFIG}', x.n_description), 'C')"
)
# Title, headings and description first, then the body: a phrase never spans two fields
# (|| shifts the right side's positions past the left's).
_WORDS = (
    f"{_HEAD} || setweight(to_tsvector('{CONFIG}', x.n_body), 'D') || "
    f"setweight(to_tsvector('{CONFIG}', x.n_side), 'D')"
)
_INSERT = text(
    f"INSERT INTO search_docs (name, headings, side, {WORDS}, {HEAD_WORDS}) "
    f"SELECT x.name, x.headings, x.side, {_WORDS}, {_HEAD} FROM {_ROWS}"
)
_DROP = text("DELETE FROM search_docs WHERE name = ANY(CAST(:names AS text[]))")
# Entries whose stored tsvectors differ from what the stored text gives now.
_DIFFERENT = text(
    f"SELECT count(*) FROM search_docs AS s JOIN {_ROWS} ON x.name = s.name "
    f"WHERE s.{WORDS} IS DISTINCT FROM {_WORDS} OR s.{HEAD_WORDS} IS DISTINCT FROM {_HEAD} "
    "OR s.headings IS DISTINCT FROM x.headings OR s.side IS DISTINCT FROM x.side"
)


# PostgreSQL refuses a tsvector whose lexemes and positions take more than 1 MB ("string is
# too long for tsvector"), which a page of ~150,000 distinct words reaches. Each field is cut
# to a budget first (body 600 KB, heading lines and side column 150 KB each, title and
# description 50 KB), so the whole row stays under the limit: such a page is searchable by
# the words of its first few hundred kilobytes, rather than failing the write that stores it.
BUDGETS = {"title": 50_000, "description": 50_000, "headings": 150_000, "side": 150_000}
BODY_BUDGET = 600_000
# Bytes per distinct lexeme besides its text: alignment, position count; 2 per position, at
# most 256 positions each (PostgreSQL's MAXNUMPOS).
_LEXEME_OVERHEAD = 3
_MAX_POSITIONS = 256


def fitted(words: str, budget: int) -> str:
    """The longest prefix of normalized text `words` (ending at a word) whose tsvector needs
    at most `budget` bytes, estimated from above (every word taken as its own lexeme)."""
    # Each word costs at most its bytes + 5 (first time) or 2 (again): a text this short fits.
    if 6 * len(words.encode()) <= budget:
        return words
    seen: dict[str, int] = {}
    size = 0
    for match in re.finditer(r"\S+", words):
        word = match.group()
        count = seen.get(word, 0)
        if count == 0:
            size += len(word.encode()) + _LEXEME_OVERHEAD
        if count < _MAX_POSITIONS:
            size += 2
        seen[word] = count + 1
        if size > budget:
            return words[: match.start()].rstrip()
    return words


def _columns(docs: Sequence[Document]) -> dict[str, list[str]]:
    """The unnest arrays of these documents' index rows."""
    columns: dict[str, list[str]] = {field: [] for field in _FIELDS}
    for doc in docs:
        content = doc.content or ""
        lines = headings(content)
        side = lexical.side_text(doc.title, content)
        # `@scope` and the like: a marker word before each, where it is written (in title,
        # heading lines and body, the texts SQLite takes its markers from): ts_rank scores a
        # query's `@scope` (the phrase of marker and name) by where the page writes it.
        marked = lexical.with_at_markers
        row = (
            doc.name,
            lines,
            side,
            fitted(normalized(marked(doc.title)), BUDGETS["title"]),
            fitted(normalized(marked(lines)), BUDGETS["headings"]),
            fitted(normalized(doc.description or ""), BUDGETS["description"]),
            fitted(normalized(marked(content)), BODY_BUDGET),
            fitted(normalized(side), BUDGETS["side"]),
        )
        for field, value in zip(_FIELDS, row, strict=True):
            columns[field].append(value)
    return columns


def indexed_fields(conn: Connection, names: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """Title, description and content hash of the stored copies of `names` (index.changed
    compares them with the copies about to be written)."""
    stored: dict[str, tuple[Any, ...]] = {}
    d = documents.c
    for start in range(0, len(names), BATCH):
        part = list(names[start : start + BATCH])
        query = select(d.name, d.title, d.description, d.content_sha256).where(d.name.in_(part))
        stored.update((row[0], tuple(row[1:])) for row in conn.execute(query))
    return stored


def reindex(conn: Connection, docs: Sequence[Document]) -> int:
    """Index `docs` (those with content), replacing their entries; returns how many."""
    names = [doc.name for doc in docs]
    for start in range(0, len(names), BATCH):
        # Usually gone already (the trigger ran when the text changed); not when a document
        # is put again unchanged through a path that reindexes anyway.
        conn.execute(_DROP, {"names": names[start : start + BATCH]})
    with_content = [doc for doc in docs if doc.content]
    for start in range(0, len(with_content), BATCH):
        conn.execute(_INSERT, _columns(with_content[start : start + BATCH]))
    return len(with_content)


def _stored(
    conn: Connection, where: ColumnElement[bool] | TextClause | None = None
) -> Iterator[list[Document]]:
    """Every document with content (and matching `where`), a batch at a time, in name order."""
    d = documents.c
    after = ""
    while True:
        query = select(d.name, d.title, d.description, d.content).where(
            d.name > after, d.content.is_not(None)
        )
        if where is not None:
            query = query.where(where)
        rows = conn.execute(query.order_by(d.name).limit(BATCH)).all()
        if not rows:
            return
        yield [Document(name=r[0], title=r[1], description=r[2], content=r[3]) for r in rows]
        after = rows[-1][0]


def rebuild(conn: Connection) -> int:
    """Rebuild every entry from the stored documents; returns how many it holds."""
    conn.execute(text("DELETE FROM search_docs"))
    count = 0
    for batch in _stored(conn):
        conn.execute(_INSERT, _columns(batch))
        count += len(batch)
    return count


def refresh(conn: Connection, where: ColumnElement[bool] | TextClause) -> int:
    """Rebuild the entries of the stored documents matching `where` (a clause on `documents`),
    when what the index derives from a page changed for some pages only; returns how many."""
    count = 0
    for batch in _stored(conn, where):
        conn.execute(_DROP, {"names": [doc.name for doc in batch]})
        conn.execute(_INSERT, _columns(batch))
        count += len(batch)
    return count


def counts(conn: Connection) -> tuple[int, int, int]:
    """Documents with content, of those the indexed ones, and entries of no such document."""
    docs = conn.execute(
        text("SELECT count(*) FROM documents WHERE content IS NOT NULL")
    ).scalar_one()
    indexed = conn.execute(
        text(
            "SELECT count(*) FROM search_docs AS s JOIN documents AS d ON d.name = s.name "
            "WHERE d.content IS NOT NULL"
        )
    ).scalar_one()
    total = conn.execute(text("SELECT count(*) FROM search_docs")).scalar_one()
    return int(docs), int(indexed), int(total) - int(indexed)


def consistent(conn: Connection) -> bool:
    """Whether every entry holds what its document's stored text gives (PostgreSQL's own
    integrity check of the GIN indexes is its business; this compares the data they index)."""
    return all(
        conn.execute(_DIFFERENT, _columns(batch)).scalar_one() == 0 for batch in _stored(conn)
    )
