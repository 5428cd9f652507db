"""The SQLite search engine for the full Store: engine.py's tantivy index on the DBAPI
connection under each SQLAlchemy one, plus what only SQLAlchemy gives: `where` filters as
Core SQL, and a hook on every commit that wakes the indexer thread (indexer.py).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Engine, event, select

from ...db import engine as engines
from ...schema.tables import documents
from ..api import IndexState, Snippet
from . import engine as tantivy_engine
from .folder import folder_for

if TYPE_CHECKING:
    from ....models import Document
    from ....search.filters import Node
    from ..api import Bulk
    from ..ranking import DocumentHit, LocalHit
    from .entries import Entry
    from .index import Session, TextIndex
    from .indexer import Indexer

_BATCH = 500
_PASSING = select(documents.c.name).where(documents.c.content.is_not(None))


def _raw(conn: Connection) -> Any:
    # The DBAPI connection under `conn`: same transaction, without SQLAlchemy's per-statement
    # bookkeeping, which would cost more than the index writes and lookups themselves.
    return conn.connection.driver_connection


class CoreFilter:
    """A `where` clause run through SQLAlchemy, for search.py (see search.Filtered)."""

    def __init__(self, conn: Connection, where: ColumnElement[bool]) -> None:
        self.conn = conn
        self.where = where

    def passing(self, names: Sequence[str]) -> set[str]:
        """The names among `names` whose documents pass the filter (and have content)."""
        found: set[str] = set()
        for start in range(0, len(names), _BATCH):
            batch = list(names[start : start + _BATCH])
            query = _PASSING.where(self.where, documents.c.name.in_(batch))
            found.update(self.conn.execute(query).scalars())
        return found

    def every(self) -> list[str]:
        """Every name whose document passes the filter (and has content)."""
        return list(self.conn.execute(_PASSING.where(self.where)).scalars())


def _filter(conn: Connection, where: Node | None) -> CoreFilter | None:
    if where is None:
        return None
    from ...db.filter_sql import to_sql

    return CoreFilter(conn, to_sql(where, documents))


class SqliteText:
    """The tantivy index beside an SQLite store, and the thread that indexes each commit's
    changes (both opened on first need)."""

    def __init__(self, engine: Engine, current: Callable[[], Engine]) -> None:
        self._current = current
        self.tantivy = tantivy_engine.TantivyEngine(folder_for(engine.url.database))
        self._indexer: Indexer | None = None
        self._lock = threading.Lock()
        self._available: bool | None = None
        self._watching = not engines.one_thread(engine)
        self.watch(engine)

    def watch(self, engine: Engine) -> None:
        """Wake the indexer on every commit through `engine` (the store's, or its resized
        one). An in-memory database is one per thread: its searches index what they need."""
        if self._watching:
            event.listen(engine, "commit", lambda _conn: self.indexer().poke())

    def index(self) -> TextIndex:
        """The tantivy index (index.py)."""
        return self.tantivy.index()

    def indexer(self) -> Indexer:
        """The thread that indexes each commit's changes (indexer.py)."""
        index = self.index()
        with self._lock:
            if self._indexer is None:
                from .indexer import Indexer

                self._indexer = Indexer(index, lambda: self._current().raw_connection())
            return self._indexer

    def close(self) -> None:
        """Stop the indexer, after indexing the last commits' changes."""
        if self._indexer is not None:
            self._indexer.close()

    def available(self) -> bool:
        """Whether the store has the change log the tantivy index follows (migration 0013)."""
        if self._available is None:
            with self._current().connect() as conn:
                self._available = tantivy_engine.available(_raw(conn))
        return self._available

    def changed(
        self,
        conn: Connection,
        docs: Sequence[Document],
        hashes: Mapping[str, str | None] | None = None,
    ) -> list[Document]:
        """The `docs` whose stored copy differs in what the index holds (engine.changed)."""
        return tantivy_engine.changed(_raw(conn), docs, hashes)

    def reindex(
        self,
        conn: Connection,
        docs: Sequence[Document],
        prepared: Mapping[str, Entry] | None = None,
        session: Session | None = None,
    ) -> int:
        """Index `docs` that have content; returns how many. Outside a bulk write the change
        log holds them already and the index follows it after the commit; a bulk write's
        `session` stages them now, so indexing runs beside the writes."""
        if session is not None:
            return tantivy_engine.stage(session, _raw(conn), docs, prepared)
        return sum(1 for doc in {d.name: d for d in docs}.values() if doc.content)

    @contextlib.contextmanager
    def bulk(self) -> Iterator[Bulk]:
        """The index held, caught up, and staging the pages of one bulk write."""
        if not self.available():
            yield _Staged(self, None)
            return
        with self.index().session(self.indexer().sync_now) as session:
            yield _Staged(self, session)

    def copied(self, conn: Connection) -> None:
        """Nothing now: the triggers logged every page copied, and the index follows that
        log (the first search syncs it)."""

    def search(
        self, query: str, *, limit: int, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """The best chunks for `query`, grouped by document."""
        # One snapshot for the ranking and text lookups; a checkout is cheap next to a search.
        with self._current().connect() as conn, conn.begin():
            return self.tantivy.search(
                _raw(conn), query, limit=limit, offset=offset, where=_filter(conn, where)
            )

    def rank_documents(
        self, query: str, *, limit: int, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking of documents for `query`."""
        with self._current().connect() as conn, conn.begin():
            return self.tantivy.rank_documents(
                _raw(conn), query, limit=limit, where=_filter(conn, where)
            )

    def headlines(self, query: str, shown: Sequence[str]) -> list[Snippet] | None:
        """None: the caller cuts SQLite's snippets itself."""
        return None

    def check(self) -> IndexState:
        """How the index compares with the documents (in one read snapshot)."""
        with self._current().connect() as conn, conn.begin():
            return self.tantivy.check(_raw(conn))

    def rebuild(self) -> int:
        """Rebuild the index from one snapshot of the documents."""
        with self._current().connect() as conn, conn.begin():
            return self.tantivy.rebuild(_raw(conn))


class _Staged:
    """A bulk write's pages, staged into the held index (`session`), or written as any other
    write when the store has no search index (None)."""

    def __init__(self, owner: SqliteText, session: Session | None) -> None:
        self._owner = owner
        self._session = session

    def changed(
        self,
        conn: Connection,
        docs: Sequence[Document],
        hashes: Mapping[str, str | None] | None = None,
    ) -> list[Document]:
        """As SqliteText.changed."""
        return self._owner.changed(conn, docs, hashes)

    def reindex(
        self,
        conn: Connection,
        docs: Sequence[Document],
        prepared: Mapping[str, Entry] | None = None,
    ) -> int:
        """Stage `docs` into the session (as SqliteText.reindex without one)."""
        return self._owner.reindex(conn, docs, prepared, self._session)

    def finish(self, conn: Connection) -> None:
        """Apply what the transaction logged that was not staged, before its commit."""
        if self._session is not None:
            self._session.finish(_raw(conn))
