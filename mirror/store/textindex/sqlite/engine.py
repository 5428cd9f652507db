"""Local search on SQLite, on plain DBAPI (sqlite3) connections: the tantivy index beside the
store file (index.py), kept in step by the store's change log (schema/index.py), ranked by
search.py.

No SQLAlchemy here: the cold-start Reader searches through this on its own sqlite3
connection, and the full Store through adapter.py, which hands over the DBAPI connection under
its SQLAlchemy one (same transaction). Tantivy and the chunker load on first use only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...db import sql
from ..api import IndexState
from ..changed import differing, last_copies

if TYPE_CHECKING:
    from ....models import Document
    from ..ranking import DocumentHit, LocalHit
    from .entries import Entry
    from .index import Session, TextIndex
    from .search import Filtered

_BATCH = 500
_STORED = "SELECT name, title, description, content_sha256 FROM documents WHERE name IN ({marks})"
_HELD = "SELECT count(*) FROM documents WHERE content IS NOT NULL AND name IN ({marks})"
_WITH_CONTENT = "SELECT count(*) FROM documents WHERE content IS NOT NULL"


def available(raw: Any) -> bool:
    """Whether the store has the change log the tantivy index follows (migration 0013)."""
    return raw.execute(sql.HAS_TABLE, {"name": sql.CHANGE_LOG}).fetchone() is not None


def stored_fields(raw: Any, names: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    """(title, description, content hash) of the stored copies of `names`, by name."""
    stored: dict[str, tuple[Any, ...]] = {}
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        rows = raw.execute(_STORED.format(marks=", ".join("?" * len(batch))), batch)
        stored.update((name, tuple(rest)) for name, *rest in rows)
    return stored


def changed(
    raw: Any, docs: Iterable[Document], hashes: Mapping[str, str | None] | None = None
) -> list[Document]:
    """The `docs` whose stored copy (as `raw` sees it) differs in what the index holds."""
    docs = last_copies(docs)
    if not docs:
        return docs
    return differing(docs, stored_fields(raw, [doc.name for doc in docs]), hashes or {})


def entries_ahead(
    raw: Any, docs: Iterable[Document], hashes: Mapping[str, str | None]
) -> dict[str, Entry]:
    """The entries of those `docs` that differ from the copies committed in the store, as
    `raw` (an SQLite connection of another thread than the writer's) sees it: derived ahead
    of the writer, which computes any other it needs (`stage`). A re-import of unchanged
    pages derives nothing."""
    docs = list({doc.name: doc for doc in docs if doc.content}.values())
    stored = stored_fields(raw, [doc.name for doc in docs])
    return entries(differing(docs, stored, hashes))


def entry(doc: Document) -> Entry:
    """The index entry of a document with content."""
    from .entries import entry_of

    return entry_of(doc.name, doc.title, doc.description, doc.content or "")


def entries(docs: Iterable[Document]) -> dict[str, Entry]:
    """The index entries of those `docs` that have content, by name (the last copy wins)."""
    return {doc.name: entry(doc) for doc in docs if doc.content}


def stage(
    session: Session,
    raw: Any,
    docs: Sequence[Document],
    prepared: Mapping[str, Entry] | None = None,
) -> int:
    """Stage `docs` (their rows just written on `raw`) into a bulk write's `session`: entries
    of those with content, removals of those without; returns how many have content.
    `prepared`: entries derived ahead (`entries_ahead`), by name."""
    docs = last_copies(docs)
    with_content = [doc for doc in docs if doc.content]
    ready = prepared or {}
    # A prepared entry is used only if it is of this very copy (a name may come twice).
    session.stage(
        raw,
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


class TantivyEngine:
    """One store's tantivy index (opened on first use) and what runs on it: checks, rebuilds,
    searches. Every method takes an sqlite3 connection to the store, in the caller's
    transaction (a read snapshot for checks and searches)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._index: TextIndex | None = None
        self._lock = threading.Lock()

    def index(self) -> TextIndex:
        """The tantivy index (index.py), opened on first need."""
        with self._lock:
            if self._index is None:
                from .index import TextIndex

                self._index = TextIndex(self.folder)
            return self._index

    def check(self, raw: Any) -> IndexState:
        """Compare the index with the documents, after indexing the changes it has not
        applied yet (which is no damage); then every entry's name is looked up."""
        index = self.index()
        docs = raw.execute(_WITH_CONTENT).fetchone()[0]
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

    def rebuild(self, raw: Any) -> int:
        """Rebuild the whole index from the store's snapshot; returns how many it holds."""
        return self.index().rebuild(raw)

    def search(
        self,
        raw: Any,
        query: str,
        *,
        limit: int,
        offset: int = 0,
        where: Filtered | None = None,
    ) -> list[LocalHit]:
        """The best chunks for `query`, grouped by document (search.py)."""
        from . import search

        return search.search(raw, self.index(), query, limit=limit, offset=offset, where=where)

    def rank_documents(
        self, raw: Any, query: str, *, limit: int, where: Filtered | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking of documents for `query` (search.py)."""
        from . import search

        return search.rank_documents(raw, self.index(), query, limit=limit, where=where)
