"""The PostgreSQL search engine: tsvector columns written in the writer's own transaction
(index.py), ranked by ts_rank (search.py), snippets by ts_headline (headline.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import ColumnElement, Connection, Engine, text

from ...db import sql
from ...schema.pg_index import WORDS
from ...schema.tables import documents
from ..api import IndexState, Snippet
from ..changed import differing, last_copies
from . import index as pg_index

if TYPE_CHECKING:
    from ....models import Document
    from ....search.filters import Node
    from ..api import Bulk
    from ..ranking import DocumentHit, LocalHit
    from ..sqlite.entries import Entry


def _where(where: Node | None) -> ColumnElement[bool] | None:
    if where is None:
        return None
    from ...db.filter_sql import to_sql

    return to_sql(where, documents)


class PostgresText:
    """Local search on a PostgreSQL store's tsvector columns (search_docs)."""

    def __init__(self, current: Callable[[], Engine], writer: Callable[[], Connection]) -> None:
        self._current = current
        self._writer = writer
        self._available: bool | None = None

    def available(self) -> bool:
        """Whether the tsvector columns exist (migration 0011)."""
        if self._available is None:
            with self._current().connect() as conn:
                params = {"table": "search_docs", "column": WORDS}
                found = conn.execute(text(sql.PG_HAS_COLUMN), params).first()
            self._available = found is not None
        return self._available

    def changed(
        self,
        conn: Connection,
        docs: Sequence[Document],
        hashes: Mapping[str, str | None] | None = None,
    ) -> list[Document]:
        """The `docs` whose stored copy differs in what the index holds, or is missing."""
        docs = last_copies(docs)
        if not docs:
            return docs
        stored = pg_index.indexed_fields(conn, [doc.name for doc in docs])
        return differing(docs, stored, hashes or {})

    def reindex(
        self,
        conn: Connection,
        docs: Sequence[Document],
        prepared: Mapping[str, Entry] | None = None,
    ) -> int:
        """Write the tsvectors of `docs` (those with content) in the caller's transaction."""
        return pg_index.reindex(conn, last_copies(docs))

    def watch(self, engine: Engine) -> None:
        """Nothing to watch: the tsvectors are written in each write's transaction."""

    @contextlib.contextmanager
    def bulk(self) -> Iterator[Bulk]:
        """A bulk write indexes as any write does, in its own transaction."""
        yield self

    def finish(self, conn: Connection) -> None:
        """Nothing to finish: the tsvectors are written with the rows."""

    def copied(self, conn: Connection) -> None:
        """Index the rows copied in, in the copy's transaction."""
        if self.available():
            pg_index.rebuild(conn)

    def search(
        self, query: str, *, limit: int, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """The best chunks for `query`, grouped by document (in one snapshot)."""
        from . import search

        with self._current().connect() as conn, conn.begin():
            return search.search(conn, query, limit=limit, offset=offset, where=_where(where))

    def rank_documents(
        self, query: str, *, limit: int, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking of documents for `query`."""
        from . import search

        with self._current().connect() as conn, conn.begin():
            return search.rank_documents(conn, query, limit=limit, where=_where(where))

    def headlines(self, query: str, shown: Sequence[str]) -> list[Snippet] | None:
        """ts_headline's snippets, in one statement."""
        from . import headline

        with self._current().connect() as conn:
            return headline.headlines(conn, query, shown)

    def check(self) -> IndexState:
        """Counts of documents and entries, and whether every entry holds what its text gives."""
        with self._current().connect() as conn, conn.begin():
            return IndexState(*pg_index.counts(conn), pg_index.consistent(conn))

    def rebuild(self) -> int:
        """Rebuild every entry, in one transaction."""
        with self._writer() as conn, conn.begin():
            return pg_index.rebuild(conn)

    def close(self) -> None:
        """Nothing runs in the background."""
