"""The local search index, kept in step with `documents`; search through Core.

On SQLite the index is a tantivy index beside the store (text_index.py), kept in step by the
store's change log (schema_index.py) and ranked by text_search.py (plain sqlite3, shared with
the cold-start Reader); a bulk write stages its pages into it as it goes (`reindex` with a
session). On PostgreSQL it is tsvector columns written in the writer's transaction
(pg_index.py, pg_search.py). This module adds what needs SQLAlchemy: the entry points, checks,
rebuilds, and `where` filters built as Core SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, select, text

from ...models import Document, content_sha256
from ..db import sql
from ..schema.tables import documents
from .ranking import DocumentHit, LocalHit
from .sqlite.entries import Entry, entry_of

if TYPE_CHECKING:
    from .sqlite.index import Session, TextIndex

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

_BATCH = 500
_STORED = "SELECT name, title, description, content_sha256 FROM documents WHERE name IN ({marks})"
_PASSING = select(documents.c.name).where(documents.c.content.is_not(None))
_HELD = "SELECT count(*) FROM documents WHERE content IS NOT NULL AND name IN ({marks})"


def _postgresql(conn: Connection) -> bool:
    # PostgreSQL has its own index (tsvector, pg_index.py and pg_search.py) behind the same
    # functions; every other database has none.
    return conn.dialect.name == "postgresql"


def available(conn: Connection) -> bool:
    """Whether this database has a search index: SQLite with the change log the tantivy index
    follows (migration 0013), or PostgreSQL with the tsvector columns (migration 0011)."""
    if _postgresql(conn):
        from ..schema.pg_index import WORDS

        found = conn.execute(text(sql.PG_HAS_COLUMN), {"table": "search_docs", "column": WORDS})
        return found.first() is not None
    if conn.dialect.name != "sqlite":
        return False
    return conn.execute(text(sql.HAS_TABLE), {"name": sql.CHANGE_LOG}).first() is not None


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
        from .postgres import index as pg_index

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


def entry(doc: Document) -> Entry:
    """The index entry of a document with content."""
    return entry_of(doc.name, doc.title, doc.description, doc.content or "")


def entries(docs: Iterable[Document]) -> dict[str, Entry]:
    """The index entries of those `docs` that have content, by name (the last copy wins)."""
    return {doc.name: entry(doc) for doc in docs if doc.content}


def reindex(
    conn: Connection,
    docs: Iterable[Document],
    prepared: Mapping[str, Entry] | None = None,
    session: Session | None = None,
) -> int:
    """Index `docs` that have content (inside the caller's transaction, after their rows are
    written); returns how many. `prepared`: entries already derived (`entries`), by name.

    On SQLite the change log holds them already, and the tantivy index follows it after the
    commit; a bulk write's `session` stages them now instead, so indexing runs beside the
    writes (tantivy indexes on threads of its own)."""
    docs = list({doc.name: doc for doc in docs}.values())  # the last copy of a name wins
    if _postgresql(conn):
        from .postgres import index as pg_index

        return pg_index.reindex(conn, docs)
    with_content = [doc for doc in docs if doc.content]
    if session is not None:
        ready = prepared or {}
        # A prepared entry is used only if it is of this very copy (a name may come twice).
        session.stage(
            _raw(conn),
            (ready[d.name] if _same(ready.get(d.name), d) else entry(d) for d in with_content),
            gone=[doc.name for doc in docs if not doc.content],
        )
    return len(with_content)


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
    consistent: bool  # the index holds every change the store logged (SQLite), or agrees (PG)

    @property
    def stale(self) -> bool:
        """Whether `rebuild` is needed."""
        return self.indexed != self.documents or self.orphans > 0 or not self.consistent


def check(conn: Connection, index: TextIndex | None) -> IndexState:
    """Compare the index with the documents (SQLite: after indexing the changes it has not
    applied yet, which is no damage; then every entry's name is looked up)."""
    if _postgresql(conn):
        from .postgres import index as pg_index

        return IndexState(*pg_index.counts(conn), pg_index.consistent(conn))
    assert index is not None
    raw = _raw(conn)
    docs = raw.execute("SELECT count(*) FROM documents WHERE content IS NOT NULL").fetchone()[0]
    index.sync(raw)
    lag = index.lag(raw)
    if lag is None:  # no index, or one that must be rebuilt
        return IndexState(docs, 0, 0, False)
    indexed = orphans = 0
    for names in index.entry_names(raw):
        marks = ", ".join("?" * len(names))
        found = raw.execute(_HELD.format(marks=marks), names).fetchone()[0]
        indexed += found
        orphans += len(names) - found
    return IndexState(docs, indexed, orphans, lag == 0)


def rebuild(conn: Connection, index: TextIndex | None) -> int:
    """Rebuild the whole index from the stored documents (PostgreSQL: inside the caller's
    transaction; SQLite: from its snapshot); returns how many documents it holds."""
    if _postgresql(conn):
        from .postgres import index as pg_index

        return pg_index.rebuild(conn)
    assert index is not None
    return index.rebuild(_raw(conn))


class _CoreFilter:
    """A `where` clause run through SQLAlchemy, for text_search (see text_search.Filtered)."""

    def __init__(self, conn: Connection, where: ColumnElement[bool]) -> None:
        self.conn = conn
        self.where = where

    def passing(self, names: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(names), _BATCH):
            batch = list(names[start : start + _BATCH])
            query = _PASSING.where(self.where, documents.c.name.in_(batch))
            found.update(self.conn.execute(query).scalars())
        return found

    def every(self) -> list[str]:
        return list(self.conn.execute(_PASSING.where(self.where)).scalars())


def search(
    conn: Connection,
    query: str,
    *,
    limit: int,
    offset: int = 0,
    where: ColumnElement[bool] | None = None,
    index: TextIndex | None = None,
) -> list[LocalHit]:
    """The best chunks for `query`, grouped by document."""
    if _postgresql(conn):
        from .postgres import search as pg_search

        return pg_search.search(conn, query, limit=limit, offset=offset, where=where)
    from .sqlite import search as text_search

    assert index is not None
    clause = _CoreFilter(conn, where) if where is not None else None
    return text_search.search(_raw(conn), index, query, limit=limit, offset=offset, where=clause)


def rank_documents(
    conn: Connection,
    query: str,
    *,
    limit: int,
    where: ColumnElement[bool] | None = None,
    index: TextIndex | None = None,
) -> list[DocumentHit]:
    """The lexical ranking of documents for `query`."""
    if _postgresql(conn):
        from .postgres import search as pg_search

        return pg_search.rank_documents(conn, query, limit=limit, where=where)
    from .sqlite import search as text_search

    assert index is not None
    clause = _CoreFilter(conn, where) if where is not None else None
    return text_search.rank_documents(_raw(conn), index, query, limit=limit, where=clause)
