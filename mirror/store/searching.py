"""The Store's local search: its index (SQLite's tantivy folder and the thread that keeps it in
step, PostgreSQL's tsvector columns), searches, checks and rebuilds.

A mixin of Store (store.py), kept apart so each file reads as one concern; it works on the
Store's own engine, writer and flags, declared below.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, event

from ..errors import StoreError
from .schema.tables import documents

if TYPE_CHECKING:
    from ..search.filters import Node
    from .textindex.engine import IndexState
    from .textindex.ranking import DocumentHit, LocalHit
    from .textindex.sqlite.index import Session, TextIndex
    from .textindex.sqlite.indexer import Indexer


class Searching:
    """Local search on a Store."""

    # The Store's (store.py).
    engine: Engine
    where: str
    _fast_sql: bool
    _one_thread: bool
    _text: TextIndex | None
    _indexer: Indexer | None
    _text_lock: threading.Lock

    def _writer(self) -> Connection:
        raise NotImplementedError

    def _watch_commits(self, engine: Engine) -> None:
        # Every commit on a file store wakes the indexer (an in-memory database is one per
        # thread: its searches index what they need themselves).
        if self._fast_sql and not self._one_thread:
            event.listen(engine, "commit", lambda _conn: self.indexer().poke())

    def text_index(self) -> TextIndex:
        """SQLite's search index, a tantivy folder beside the store file (text_index.py)."""
        with self._text_lock:
            if self._text is None:
                from .textindex.sqlite.folder import folder_for
                from .textindex.sqlite.index import TextIndex

                self._text = TextIndex(folder_for(self.engine.url.database))
            return self._text

    def indexer(self) -> Indexer:
        """The thread that indexes each commit's changes (indexer.py)."""
        index = self.text_index()
        with self._text_lock:
            if self._indexer is None:
                from .textindex.sqlite.indexer import Indexer

                self._indexer = Indexer(index, lambda: self.engine.raw_connection())
            return self._indexer

    def _index_session(self) -> contextlib.AbstractContextManager[Session | None]:
        """For a bulk write on SQLite: the search index held, caught up, and staging pages."""
        if not self._fast_sql or not self.has_search_index():
            return contextlib.nullcontext()
        return self.text_index().session(self.indexer().sync_now)

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index (`where`: a parsed upstream filter)."""
        if not self.has_search_index():
            return []
        from .db.filter_sql import to_sql
        from .textindex import engine as index

        clause = to_sql(where, documents) if where is not None else None
        # One snapshot for the ranking and text lookups; a checkout is cheap next to a search.
        with self.engine.connect() as conn, conn.begin():
            return index.search(
                conn, query, limit=limit, offset=offset, where=clause, index=self._text_for_search()
            )

    def headlines(self, query: str, shown: Sequence[str]) -> list[list[tuple[str, bool]]] | None:
        """The snippets of texts `shown` for `query` by the database's own machinery, in one
        statement (ts_headline on PostgreSQL); None on SQLite, where the caller cuts them itself
        (mirror.service.search.snippets: best_window)."""
        if self.engine.dialect.name != "postgresql":
            return None
        from .textindex.postgres import headline as pg_headline

        with self.engine.connect() as conn:
            return pg_headline.headlines(conn, query, shown)

    def rank_documents(
        self, query: str, *, limit: int = 10, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking: the best `limit` documents for `query`, best first."""
        if not self.has_search_index():
            return []
        from .db.filter_sql import to_sql
        from .textindex import engine as index

        clause = to_sql(where, documents) if where is not None else None
        with self.engine.connect() as conn, conn.begin():
            return index.rank_documents(
                conn, query, limit=limit, where=clause, index=self._text_for_search()
            )

    def _text_for_search(self) -> TextIndex | None:
        return self.text_index() if self._fast_sql else None

    def check_index(self) -> IndexState:
        """How the search index compares with the documents."""
        self._need_index()
        from .textindex import engine as index

        with self.engine.connect() as conn, conn.begin():
            return index.check(conn, self._text_for_search())

    def rebuild_index(self) -> int:
        """Rebuild the search index from the documents (PostgreSQL: in one transaction; SQLite:
        from one snapshot); returns how many documents it holds."""
        self._need_index()
        from .textindex import engine as index

        if self._fast_sql:
            with self.engine.connect() as conn, conn.begin():
                return index.rebuild(conn, self.text_index())
        with self._writer() as conn, conn.begin():
            return index.rebuild(conn, None)

    def _need_index(self) -> None:
        if not self.has_search_index():
            raise StoreError(
                f"{self.where} has no local search index (SQLite's change log from schema "
                "revision 0013, or PostgreSQL's tsvector columns from 0011)",
                hint="run `dk-mirror db upgrade`; local search needs SQLite or PostgreSQL",
            )

    def has_search_index(self) -> bool:
        """Whether local full-text search is available (SQLite's change log for its tantivy
        index, or PostgreSQL's tsvector index built)."""
        found: bool | None = getattr(self, "_has_index", None)
        if found is None:
            with self.engine.connect() as conn:
                from .textindex import engine as index

                found = self._has_index = index.available(conn)
        return found
