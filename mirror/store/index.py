"""The local search index (SQLite FTS5), kept in step with `documents`; search through Core.

`reindex` runs inside the writer's transaction, so documents and their index commit or roll
back together; the triggers on `documents` (schema_index.py) remove a document's old index
entry whenever its text changes or it is deleted. Ranking lives in fts.py (plain sqlite3,
shared with the cold-start Reader); this module adds what needs SQLAlchemy: writes, checks,
rebuilds, and `where` filters built as Core SQL.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Connection, Float, Integer, column, select, text

from ..models import Document, content_sha256
from ..search import lexical
from ..search.chunking import headings
from . import fts, sql
from .compression import inflate
from .fts import RANK, DocumentHit, LocalHit
from .schema import documents
from .schema_index import search_docs
from .sql import FTS_TABLE, HEAD_TABLE

__all__ = [
    "DocumentHit",
    "LocalHit",
    "available",
    "changed",
    "check",
    "rank_documents",
    "rebuild",
    "reindex",
    "search",
]

_BATCH = fts.BATCH
_STORED = "SELECT name, title, description, content_sha256 FROM documents WHERE name IN ({marks})"
_FILTERED = select(search_docs.c.id, search_docs.c.name).join(
    documents, documents.c.name == search_docs.c.name
)
_COLUMNS = "title, description, headings, body, side"
_HEAD = "title, description, headings"
# Old entries of these names, removed with exactly the values FTS5 indexed (the view reads
# them from the same rows they were indexed from: only changed text is re-indexed).
_FORGET = (
    f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, {_COLUMNS}) "
    f"SELECT 'delete', id, {_COLUMNS} FROM search_content WHERE id IN "
    "(SELECT id FROM search_docs WHERE name IN ({marks}))"
)
_FORGET_HEAD = (
    f"INSERT INTO {HEAD_TABLE} ({HEAD_TABLE}, rowid, {_HEAD}) "
    f"SELECT 'delete', id, {_HEAD} FROM search_content WHERE id IN "
    "(SELECT id FROM search_docs WHERE name IN ({marks}))"
)
_DROP = "DELETE FROM search_docs WHERE name IN ({marks})"
_INSERT_DOC = "INSERT INTO search_docs (name, headings, side) VALUES (?, ?, ?)"
# New entries get their ids here, so the FTS rows are written straight from the values in
# hand: reading them back through the view (a join, and every page's text again) cost more.
_INSERT_DOC_AT = "INSERT INTO search_docs (id, name, headings, side) VALUES "
# AUTOINCREMENT never reuses an id: the next is past both the largest id ever handed out
# (sqlite_sequence) and the largest present. The writer holds the write lock (BEGIN IMMEDIATE).
_NEXT_ID = (
    "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'search_docs'), 0), "
    "coalesce((SELECT max(id) FROM search_docs), 0)) + 1"
)
_INSERT_FTS = f"INSERT INTO {FTS_TABLE} (rowid, {_COLUMNS}) VALUES "
_INSERT_HEAD = f"INSERT INTO {HEAD_TABLE} (rowid, {_HEAD}) VALUES "
# Rows per INSERT statement: one statement runs in one call that releases the GIL throughout,
# where executemany takes the GIL back after every row (and waits for it while the preparing
# thread runs). 100 rows of 6 values stay under any SQLite's limit of 999 variables.
_ROWS_PER_INSERT = 100


@functools.lru_cache(maxsize=64)
def _values(width: int, rows: int) -> str:
    one = "(" + ", ".join("?" * width) + ")"
    return ", ".join([one] * rows)


def _insert_rows(cursor: Any, insert: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """INSERT `rows` (tuples of one width) with as few statements as the variable limit lets."""
    for start in range(0, len(rows), _ROWS_PER_INSERT):
        part = rows[start : start + _ROWS_PER_INSERT]
        cursor.execute(insert + _values(len(part[0]), len(part)), [v for row in part for v in row])


class Entry(NamedTuple):
    """What the index holds for one document: exactly the values the view `search_content`
    reads back for it (FTS5 removes an entry only when given the values it indexed)."""

    name: str
    title: str | None
    description: str | None
    headings: str
    body: str
    side: str


def _postgresql(conn: Connection) -> bool:
    # PostgreSQL has its own index (tsvector, pg_index.py and pg_search.py) behind the same
    # functions; every other database has none.
    return conn.dialect.name == "postgresql"


def available(conn: Connection) -> bool:
    """Whether this database has a search index: SQLite with FTS5 (migration 0007), or
    PostgreSQL with the tsvector columns (migration 0011)."""
    if _postgresql(conn):
        from .schema_pg_index import WORDS

        found = conn.execute(text(sql.PG_HAS_COLUMN), {"table": "search_docs", "column": WORDS})
        return found.first() is not None
    if conn.dialect.name != "sqlite":
        return False
    return conn.execute(text(sql.HAS_TABLE), {"name": FTS_TABLE}).first() is not None


def _raw(conn: Connection) -> Any:
    # The DBAPI connection under `conn`: same transaction, without SQLAlchemy's per-statement
    # bookkeeping, which would cost more than the index writes and lookups themselves.
    return conn.connection.driver_connection


def changed(
    conn: Connection, docs: Iterable[Document], hashes: Mapping[str, str | None] | None = None
) -> list[Document]:
    """The `docs` whose stored copy differs in what the index holds (title, description,
    content) or is missing: call before writing them, then reindex only these. `hashes`: the
    content hashes of (the last copies of) `docs` by name, if already computed."""
    docs = list({doc.name: doc for doc in docs}.values())
    stored: dict[str, tuple[Any, ...]] = {}
    if _postgresql(conn) and docs:
        from . import pg_index

        stored = pg_index.indexed_fields(conn, [doc.name for doc in docs])
    elif conn.dialect.name != "sqlite" or not docs:
        return docs
    else:
        stored = _stored_fields(_raw(conn), [doc.name for doc in docs])
    return _differing(docs, stored, hashes or {})


def _stored_fields(raw: Any, names: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    stored: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        rows = raw.execute(_STORED.format(marks=", ".join("?" * len(batch))), batch)
        stored.update((name, tuple(rest)) for name, *rest in rows)
    return stored


def _differing(
    docs: list[Document], stored: Mapping[str, tuple[Any, ...]], hashes: Mapping[str, str | None]
) -> list[Document]:
    def sha(doc: Document) -> str | None:
        if doc.name in hashes:
            return hashes[doc.name]
        return content_sha256(doc.content) if doc.content is not None else None

    # Re-putting unchanged pages (refresh, re-import) then skips the index writes.
    return [
        doc
        for doc in docs
        if (found := stored.get(doc.name)) is None
        or found != (doc.title, doc.description, sha(doc))
    ]


def entries_ahead(
    raw: Any, docs: Iterable[Document], hashes: Mapping[str, str | None]
) -> dict[str, Entry]:
    """The entries of those `docs` that differ from the copies committed in the store, as
    `raw` (an SQLite connection of another thread than the writer's) sees it: derived ahead
    of the writer, which computes any other it needs (`reindex`). A re-import of unchanged
    pages derives nothing."""
    docs = list({doc.name: doc for doc in docs if doc.content}.values())
    stored = _stored_fields(raw, [doc.name for doc in docs])
    return entries(_differing(docs, stored, hashes))


def index_row(doc: Document) -> tuple[str, str, str]:
    """The search_docs row of a document with content: name, heading lines, side column."""
    content = doc.content or ""
    lines = headings(content)
    return doc.name, lines, lexical.side_text(doc.title, content)


def entry(doc: Document) -> Entry:
    """The index entry of a document with content (pure: may run ahead, in another thread)."""
    name, lines, side = index_row(doc)
    return Entry(name, doc.title, doc.description, lines, doc.content or "", side)


def entries(docs: Iterable[Document]) -> dict[str, Entry]:
    """The index entries of those `docs` that have content, by name (the last copy wins)."""
    return {doc.name: entry(doc) for doc in docs if doc.content}


def _write(raw: Any, rows: Sequence[Entry]) -> None:
    """Index these entries (their documents are already written)."""
    cursor = raw.cursor()
    try:
        names = [row.name for row in rows]
        for start in range(0, len(names), _BATCH):
            batch = names[start : start + _BATCH]
            marks = ", ".join("?" * len(batch))
            # Normally gone already (the triggers ran when the text changed); a document put
            # again unchanged through apply_changes still has its entry.
            cursor.execute(_FORGET.format(marks=marks), batch)
            cursor.execute(_FORGET_HEAD.format(marks=marks), batch)
            cursor.execute(_DROP.format(marks=marks), batch)
        first = cursor.execute(_NEXT_ID).fetchone()[0]
        ids = [(first + i, row) for i, row in enumerate(rows)]
        _insert_rows(cursor, _INSERT_DOC_AT, [(i, r.name, r.headings, r.side) for i, r in ids])
        _insert_rows(
            cursor,
            _INSERT_FTS,
            [(i, r.title, r.description, r.headings, r.body, r.side) for i, r in ids],
        )
        _insert_rows(
            cursor, _INSERT_HEAD, [(i, r.title, r.description, r.headings) for i, r in ids]
        )
    finally:
        cursor.close()


def reindex(
    conn: Connection, docs: Iterable[Document], prepared: Mapping[str, Entry] | None = None
) -> int:
    """Index `docs` that have content (inside the caller's transaction, after their rows are
    written); returns how many. `prepared`: entries already derived (`entries`), by name."""
    docs = list({doc.name: doc for doc in docs}.values())  # the last copy of a name wins
    if _postgresql(conn):
        from . import pg_index

        return pg_index.reindex(conn, docs)
    if conn.dialect.name != "sqlite":
        return 0  # no search index on this database
    ready = prepared or {}
    # Metadata only: nothing to search. A prepared entry is used only if it is of this very
    # copy (a name may come twice in a stream).
    rows = [
        ready[doc.name] if _same(ready.get(doc.name), doc) else entry(doc)
        for doc in docs
        if doc.content
    ]
    if rows:
        _write(_raw(conn), rows)
    return len(rows)


def _same(prepared: Entry | None, doc: Document) -> bool:
    return (
        prepared is not None
        and prepared.body is doc.content
        and prepared.title == doc.title
        and prepared.description == doc.description
    )


@dataclass(frozen=True, slots=True)
class IndexState:
    """How the index compares with the documents it should hold."""

    documents: int  # documents with content
    indexed: int  # of those, with an index entry
    orphans: int  # index entries whose document is gone (or has no content)
    consistent: bool  # FTS5's own integrity check against the stored text

    @property
    def stale(self) -> bool:
        """Whether `rebuild` is needed."""
        return self.indexed != self.documents or self.orphans > 0 or not self.consistent


def check(conn: Connection) -> IndexState:
    """Compare the index with the documents (FTS5's integrity-check reads every row)."""
    if _postgresql(conn):
        from . import pg_index

        return IndexState(*pg_index.counts(conn), pg_index.consistent(conn))
    raw = _raw(conn)
    docs = raw.execute("SELECT count(*) FROM documents WHERE content IS NOT NULL").fetchone()[0]
    indexed = raw.execute(
        "SELECT count(*) FROM search_docs AS s JOIN documents AS d ON d.name = s.name "
        "WHERE d.content IS NOT NULL"
    ).fetchone()[0]
    total = raw.execute(f"SELECT count(*) FROM {FTS_TABLE}_docsize").fetchone()[0]
    try:
        for table in (FTS_TABLE, HEAD_TABLE):
            raw.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
        consistent = True
    except sqlite3.DatabaseError:  # SQLITE_CORRUPT_VTAB: the index disagrees with the text
        consistent = False
    return IndexState(docs, indexed, total - indexed, consistent)


def _stored(raw: Any) -> Iterator[list[Document]]:
    after = ""
    while True:
        rows = raw.execute(
            "SELECT name, title, content FROM documents WHERE name > ? AND content IS NOT NULL "
            "ORDER BY name LIMIT ?",
            (after, _BATCH),
        ).fetchall()
        if not rows:
            return
        yield [Document(name=n, title=t, content=inflate(c)) for n, t, c in rows]
        after = rows[-1][0]


def rebuild(conn: Connection) -> int:
    """Rebuild the whole index from the stored documents (inside the caller's transaction);
    returns how many documents it holds."""
    if _postgresql(conn):
        from . import pg_index

        return pg_index.rebuild(conn)
    raw = _raw(conn)
    for table in (FTS_TABLE, HEAD_TABLE):
        raw.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
    raw.execute("DELETE FROM search_docs")
    count = 0
    for batch in _stored(raw):
        rows = [index_row(doc) for doc in batch]
        raw.executemany(_INSERT_DOC, rows)
        count += len(rows)
    for table in (FTS_TABLE, HEAD_TABLE):
        raw.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
        raw.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
    return count


def _all_filtered(
    conn: Connection, match: str, need: int, where: ColumnElement[bool]
) -> list[fts.RankedRow]:
    """The best `need` matches that pass `where`, ranked in one SQL statement."""
    hits = (
        text(f"SELECT rowid AS id, {RANK} AS r FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :match")
        .columns(column("id", Integer), column("r", Float))
        .subquery("hits")
    )
    s = search_docs.c
    query = (
        select(hits.c.id, hits.c.r, s.name)
        .join_from(hits, search_docs, s.id == hits.c.id)
        .join(documents, documents.c.name == s.name)
        .where(where)
        .order_by(hits.c.r, s.name)
        .limit(need)
    )
    return [(row[0], row[1], row[2]) for row in conn.execute(query, {"match": match})]


class _CoreFilter:
    """A `where` clause run through SQLAlchemy, for fts.search (see fts.Filtered)."""

    def __init__(self, conn: Connection, where: ColumnElement[bool]) -> None:
        self.conn = conn
        self.where = where

    def rows(self, ids: Sequence[int]) -> Iterable[fts.DocRow]:
        """The indexed documents among `ids` that pass the filter."""
        query = _FILTERED.where(self.where, search_docs.c.id.in_(ids))
        return [(row[0], row[1]) for row in self.conn.execute(query)]

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
    """The best chunks for `query`, grouped by document (fts.search on this connection)."""
    if _postgresql(conn):
        from . import pg_search

        return pg_search.search(conn, query, limit=limit, offset=offset, where=where)
    clause = _CoreFilter(conn, where) if where is not None else None
    return fts.search(_raw(conn), query, limit=limit, offset=offset, where=clause)


def rank_documents(
    conn: Connection, query: str, *, limit: int, where: ColumnElement[bool] | None = None
) -> list[DocumentHit]:
    """The lexical ranking of documents for `query` (fts.rank_documents on this connection)."""
    if _postgresql(conn):
        from . import pg_search

        return pg_search.rank_documents(conn, query, limit=limit, where=where)
    clause = _CoreFilter(conn, where) if where is not None else None
    return fts.rank_documents(_raw(conn), query, limit=limit, where=clause)
