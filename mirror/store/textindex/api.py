"""The one interface of a local search engine.

A Store holds one `TextEngine`, picked from its database once when it opens (choose.py):
SQLite gets the tantivy index beside the file (sqlite/adapter.py over sqlite/engine.py),
PostgreSQL its tsvector columns (postgres/engine.py). No method asks which database it is on
again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ...models import Document
    from ...search.filters import Node
    from .ranking import DocumentHit, LocalHit
    from .sqlite.entries import Entry

Snippet = list[tuple[str, bool]]


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


class Indexing(Protocol):
    """What a write transaction calls to keep the index in step with the rows it writes."""

    def changed(
        self,
        conn: Connection,
        docs: Sequence[Document],
        hashes: Mapping[str, str | None] | None = None,
    ) -> list[Document]:
        """The `docs` whose stored copy differs in what the index holds (title, description,
        content) or is missing: call before writing them, then reindex only these. `hashes`:
        the content hashes of (the last copies of) `docs` by name, if already computed."""
        ...

    def reindex(
        self,
        conn: Connection,
        docs: Sequence[Document],
        prepared: Mapping[str, Entry] | None = None,
    ) -> int:
        """Index `docs` that have content (in the caller's transaction, after their rows are
        written); returns how many. `prepared`: entries already derived, by name."""
        ...


class Bulk(Indexing, Protocol):
    """The index held for one bulk write (SQLite: pages staged into tantivy as they are
    written, so indexing runs beside the writes)."""

    def finish(self, conn: Connection) -> None:
        """Inside the write's transaction, just before it commits."""
        ...


class TextEngine(Indexing, Protocol):
    """Local full-text search on one store's database: its index, checks, rebuilds, searches."""

    def available(self) -> bool:
        """Whether this database has a search index (SQLite's change log from schema revision
        0013, PostgreSQL's tsvector columns from 0011)."""
        ...

    def watch(self, engine: Engine) -> None:
        """The store works through `engine` from now on (a server resized its pool)."""
        ...

    def bulk(self) -> AbstractContextManager[Bulk]:
        """Hold the index for a bulk write; enter before the write's transaction begins (it
        ends after the commit)."""
        ...

    def copied(self, conn: Connection) -> None:
        """Rows were copied into this store by `conn` (db/copy.py), inside its transaction:
        index them as the engine needs."""
        ...

    def search(
        self, query: str, *, limit: int, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """The best chunks for `query`, grouped by document (`where`: a parsed filter)."""
        ...

    def rank_documents(
        self, query: str, *, limit: int, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking: the best `limit` documents for `query`, best first."""
        ...

    def headlines(self, query: str, shown: Sequence[str]) -> list[Snippet] | None:
        """The snippets of texts `shown` for `query` by the database's own machinery; None
        where the caller cuts them itself (mirror.search.snippets.best_window)."""
        ...

    def check(self) -> IndexState:
        """How the index compares with the documents."""
        ...

    def rebuild(self) -> int:
        """Rebuild the whole index from the stored documents; returns how many it holds."""
        ...

    def close(self) -> None:
        """Stop any background work (after indexing the last commits' changes)."""
        ...
