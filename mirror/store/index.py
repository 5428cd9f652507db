"""The local search index (SQLite FTS5), kept in step with `documents`; search through Core.

`reindex` runs inside the writer's transaction, so documents and their index commit or roll
back together. Ranking lives in fts.py (plain sqlite3, shared with the cold-start Reader);
this module adds what needs SQLAlchemy: writes, and `where` filters built as Core SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Float, Integer, column, select, text

from ..models import Document, content_sha256
from ..search.chunking import chunk_markdown
from . import fts, sql
from .fts import RANK, STOPWORDS, LocalHit, match_expression, query_terms
from .schema import documents
from .schema_index import chunks
from .sql import FTS_TABLE

__all__ = [
    "STOPWORDS",
    "LocalHit",
    "available",
    "changed",
    "match_expression",
    "query_terms",
    "reindex",
    "search",
]

_BATCH = fts.BATCH
_STORED = "SELECT name, title, description, content_sha256 FROM documents WHERE name IN ({marks})"
_FILTERED = select(
    chunks.c.id, chunks.c.name, chunks.c.chunk_id, chunks.c.ordinal, chunks.c.heading
).join(documents, documents.c.name == chunks.c.name)
_INSERT_CHUNK = "INSERT INTO chunks (id, name, chunk_id, ordinal, heading) VALUES (?, ?, ?, ?, ?)"
_INSERT_FTS = (
    f"INSERT INTO {FTS_TABLE} (rowid, title, description, heading, body) VALUES (?, ?, ?, ?, ?)"
)


def available(conn: Connection) -> bool:
    """Whether this database has the FTS index (SQLite with migration 0002 applied)."""
    if conn.dialect.name != "sqlite":
        return False
    return conn.execute(text(sql.HAS_TABLE), {"name": FTS_TABLE}).first() is not None


def _raw(conn: Connection) -> Any:
    # The DBAPI connection under `conn`: same transaction, without SQLAlchemy's per-statement
    # bookkeeping, which would cost more than the index writes and lookups themselves.
    return conn.connection.driver_connection


def changed(conn: Connection, docs: Iterable[Document]) -> list[Document]:
    """The `docs` whose stored copy differs in what the index holds (title, description,
    content) or is missing: call before writing them, then reindex only these."""
    docs = list({doc.name: doc for doc in docs}.values())
    if conn.dialect.name != "sqlite" or not docs:
        return docs
    stored: dict[str, tuple[str | None, str | None, str | None]] = {}
    raw = _raw(conn)
    for start in range(0, len(docs), _BATCH):
        names = [doc.name for doc in docs[start : start + _BATCH]]
        rows = raw.execute(_STORED.format(marks=", ".join("?" * len(names))), names)
        stored.update((name, tuple(rest)) for name, *rest in rows)
    # Re-putting unchanged pages (refresh, re-import) then skips chunking and FTS writes.
    return [
        doc
        for doc in docs
        if stored.get(doc.name)
        != (
            doc.title,
            doc.description,
            content_sha256(doc.content) if doc.content is not None else None,
        )
    ]


def reindex(conn: Connection, docs: Iterable[Document]) -> int:
    """Replace the chunks of `docs` in the index (inside the caller's transaction)."""
    if conn.dialect.name != "sqlite":
        return 0  # no FTS5: local search needs SQLite
    docs = list({doc.name: doc for doc in docs}.values())  # the last copy of a name wins
    if not docs:
        return 0
    raw = _raw(conn)
    cursor = raw.cursor()
    try:
        for start in range(0, len(docs), _BATCH):
            names = [doc.name for doc in docs[start : start + _BATCH]]
            # The trigger on chunks deletes each chunk's FTS row by rowid.
            marks = ", ".join("?" * len(names))
            cursor.execute(f"DELETE FROM chunks WHERE name IN ({marks})", names)
        # The writer holds the write lock (BEGIN IMMEDIATE), so numbering from max(id) is safe;
        # it lets both tables be filled with executemany instead of one insert per chunk.
        next_id = cursor.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()[0]
        chunk_rows: list[tuple[int, str, str, int, str]] = []
        fts_rows: list[tuple[int, str, str, str, str]] = []
        for doc in docs:
            if not doc.content:
                continue  # metadata only (BASIC view): nothing to search
            title, description = doc.title or "", doc.description or ""
            for ordinal, chunk in enumerate(chunk_markdown(doc.content)):
                chunk_rows.append((next_id, doc.name, chunk.id, ordinal, chunk.heading))
                fts_rows.append((next_id, title, description, chunk.heading, chunk.text))
                next_id += 1
        cursor.executemany(_INSERT_CHUNK, chunk_rows)
        cursor.executemany(_INSERT_FTS, fts_rows)
    finally:
        cursor.close()
    return len(chunk_rows)


def _all_filtered(
    conn: Connection, match: str, need: int, where: ColumnElement[bool]
) -> list[fts.RankedRow]:
    """The best `need` matches that pass `where`, ranked in one SQL statement."""
    hits = (
        text(f"SELECT rowid AS id, {RANK} AS r FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :match")
        .columns(column("id", Integer), column("r", Float))
        .subquery("hits")
    )
    c = chunks.c
    query = (
        select(hits.c.id, hits.c.r, c.name, c.chunk_id, c.ordinal, c.heading)
        .join_from(hits, chunks, c.id == hits.c.id)
        .join(documents, documents.c.name == c.name)
        .where(where)
        .order_by(hits.c.r, c.name, c.ordinal)
        .limit(need)
    )
    return list(conn.execute(query, {"match": match}).all())


class _CoreFilter:
    """A `where` clause run through SQLAlchemy, for fts.search (see fts.Filtered)."""

    def __init__(self, conn: Connection, where: ColumnElement[bool]) -> None:
        self.conn = conn
        self.where = where

    def rows(self, ids: Sequence[int]) -> Iterable[fts.ChunkRow]:
        """The chunks among `ids` whose documents pass the filter."""
        return self.conn.execute(_FILTERED.where(self.where, chunks.c.id.in_(ids))).all()

    def best(self, match: str, need: int) -> Iterable[fts.RankedRow]:
        """The best `need` matches that pass the filter, ranked in one SQL statement."""
        return _all_filtered(self.conn, match, need, self.where)


def search(
    conn: Connection,
    query: str,
    *,
    limit: int,
    offset: int = 0,
    where: ColumnElement[bool] | None = None,
) -> list[LocalHit]:
    """The best chunks for `query` (fts.search on this connection's DBAPI connection)."""
    clause = _CoreFilter(conn, where) if where is not None else None
    return fts.search(_raw(conn), query, limit=limit, offset=offset, where=clause)
