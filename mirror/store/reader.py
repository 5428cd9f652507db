"""A read-only view of an SQLite store on the stdlib sqlite3 module, for cold CLI starts.

Importing SQLAlchemy costs more than a whole cached `dk-mirror get --offline` should take, so
a one-thread command that only reads opens this instead of the full Store. It runs the same
SQL text (sql.py) and the same ranking (text_search.py) as the Store, so results are identical
(tests/test_cold_start.py). It opens only a store that is already there, at this version's
schema revision; anything else (a new or old store, another database, a bad path) returns
None from `open`, and the caller takes the normal path with its migrations and messages.
Anything it cannot do itself (writes, `where` filters, snapshot reads) goes to a full Store
opened on first need.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DEFAULT_KEEP_VERSIONS
from ..models import (
    Answer,
    AsOf,
    CachedDocument,
    Document,
    PutReport,
    SearchPage,
    Stamp,
    Stats,
    StoreFacts,
    Summary,
    Version,
)
from .db import compression, sql
from .db.rows import cached_document

if TYPE_CHECKING:
    from ..changes.events import ChangeEvent, ChangeFilter
    from ..search.filters import Node
    from ..symbols.model import Symbol
    from .store import Store
    from .tables.buckets import Buckets
    from .tables.recorded import RecordedAnswer, RecordedPage
    from .tables.vector_state import SemanticFacts, VectorState
    from .textindex.api import IndexState
    from .textindex.ranking import DocumentHit, LocalHit
    from .textindex.sqlite.engine import TantivyEngine

_PREFIX = "sqlite:///"
# Milliseconds to wait on a lock: a writer's checkpoint or WAL recovery can hold one briefly.
BUSY_TIMEOUT_MS = 5000


def sqlite_path(url: str) -> str | None:
    """The file of a plain `sqlite:///ABSOLUTE_PATH` URL; None for any other URL (options,
    escapes, memory, relative paths), which the full Store interprets instead."""
    if not url.startswith(_PREFIX):
        return None
    path = url[len(_PREFIX) :]
    if not path.startswith("/") or any(c in path for c in "?#%"):
        return None
    return path


class Reader:
    """The Store's read methods on one sqlite3 connection (one thread), opened read-only."""

    def __init__(
        self,
        url: str,
        conn: sqlite3.Connection,
        *,
        upgrade: bool,
        readonly: bool = False,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
    ) -> None:
        self.url = url
        self._conn = conn
        self._upgrade = upgrade
        self._keep_versions = keep_versions
        self._readonly = readonly  # the full Store, when needed, opens the same way
        self._full: Store | None = None
        self._has_index: bool | None = None
        self._tantivy: TantivyEngine | None = None
        self._watchers: list[Callable[[list[str]], None]] = []

    @classmethod
    def open(
        cls,
        url: str,
        *,
        upgrade: bool = True,
        readonly: bool = False,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
    ) -> Reader | None:
        """A Reader for an existing SQLite store at the current revision, else None."""
        path = sqlite_path(url)
        if path is None or not os.path.isfile(path):
            return None
        try:
            # mode=ro: reading must neither create a store nor need write access to one.
            conn = sqlite3.connect(Path(path).as_uri() + "?mode=ro", uri=True, isolation_level=None)
        except sqlite3.Error:
            return None
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            compression.register(conn)  # search reads the Markdown through dk_inflate
            row = conn.execute(sql.REVISION).fetchone()
        except sqlite3.Error:  # not a store, no schema yet, unreadable: the Store will say
            conn.close()
            return None
        if row is None or row[0] != sql.SCHEMA_REVISION:
            conn.close()
            return None
        return cls(url, conn, upgrade=upgrade, readonly=readonly, keep_versions=keep_versions)

    def close(self) -> None:
        """Close the connection (and the full Store, if a write opened one)."""
        self._conn.close()
        if self._full is not None:
            self._full.close()
            self._full = None

    def full(self) -> Store:
        """The full Store on the same database, opened on first need (writes, filters)."""
        if self._full is None:
            from .store import Store

            self._full = Store.open(
                self.url,
                upgrade=self._upgrade,
                readonly=self._readonly,
                keep_versions=self._keep_versions,
            )
            for watcher in self._watchers:
                self._full.on_written(watcher)
        return self._full

    def on_written(self, watcher: Callable[[list[str]], None]) -> None:
        """Call `watcher` with the names each write changed (the writes go to the full Store)."""
        self._watchers.append(watcher)
        if self._full is not None:
            self._full.on_written(watcher)

    # -- reads, with the Store's SQL ------------------------------------------------------

    def revision(self) -> str | None:
        """The schema revision stamped in the database."""
        row = self._conn.execute(sql.REVISION).fetchone()
        return None if row is None else str(row[0])

    def get_many(self, names: Sequence[str]) -> dict[str, CachedDocument]:
        """Cached copies of `names` that exist, by name."""
        found: dict[str, CachedDocument] = {}
        step = sql.MAX_FIXED_NAMES
        for start in range(0, len(names), step):
            batch = tuple(names[start : start + step])
            for row in self._conn.execute(sql.BY_NAMES[len(batch)], batch):
                found[row[0]] = cached_document(row)
        return found

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None, *, content_only: bool = False
    ) -> Iterator[Summary]:
        """Documents by name, optionally only those whose name starts with `prefix`
        (`content_only`: leave out metadata-only rows)."""
        query = sql.listing(prefix=bool(prefix), limit=limit is not None, content_only=content_only)
        for row in self._conn.execute(query, sql.listing_params(prefix, limit)):
            yield sql.summary(row)

    def stats(self) -> Stats:
        """Counts, bytes and fetch times over the whole store."""
        self._conn.execute("BEGIN")  # the counts and fetch times of the same moment
        try:
            by_source = self._conn.execute(sql.STATS_KEPT).fetchall()
            fetched = self._conn.execute(sql.STATS_FETCHED).fetchone()
        finally:
            self._conn.execute("COMMIT")
        return sql.stats(by_source, fetched)

    def has_search_index(self) -> bool:
        """Whether local full-text search is available (the index table exists)."""
        if self._has_index is None:
            from .textindex.sqlite.engine import available

            self._has_index = available(self._conn)
        return self._has_index

    def headlines(self, query: str, shown: Sequence[str]) -> list[list[tuple[str, bool]]] | None:
        """None: SQLite has no headline machinery (the caller cuts the snippets itself)."""
        return None

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index (a `where` filter goes to the full Store)."""
        if where is not None:
            return self.full().search_local(query, limit=limit, offset=offset, where=where)
        if not self.has_search_index():
            return []
        self._conn.execute("BEGIN")  # one snapshot for the ranking and text lookups
        try:
            return self._text().search(self._conn, query, limit=limit, offset=offset)
        finally:
            self._conn.execute("COMMIT")

    def rank_documents(
        self, query: str, *, limit: int = 10, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking of documents (a `where` filter goes to the full Store)."""
        if where is not None:
            return self.full().rank_documents(query, limit=limit, where=where)
        if not self.has_search_index():
            return []
        self._conn.execute("BEGIN")
        try:
            return self._text().rank_documents(self._conn, query, limit=limit)
        finally:
            self._conn.execute("COMMIT")

    def _text(self) -> TantivyEngine:
        # The store's tantivy index (synced by the search itself: it only reads the store).
        if self._tantivy is None:
            from .textindex.sqlite.engine import TantivyEngine
            from .textindex.sqlite.folder import folder_for

            self._tantivy = TantivyEngine(folder_for(sqlite_path(self.url)))
        return self._tantivy

    def check_index(self) -> IndexState:
        """How the search index compares with the documents (through the full Store)."""
        return self.full().check_index()

    def rebuild_index(self) -> int:
        """Rebuild the search index from the documents (through the full Store)."""
        return self.full().rebuild_index()

    def symbol_exact(self, name: str) -> Symbol | None:
        """The symbol called `name` (case folded) whose page is stored, or None."""
        from .db import symbol_sql  # here: a cold `get` never looks symbols up

        rows = self._conn.execute(symbol_sql.EXACT, {"key": name.strip().casefold()})
        found = symbol_sql.best(rows)
        return found[0] if found else None

    def symbol_lookup(self, prefix: str, limit: int) -> list[Symbol]:
        """Up to `limit` symbols whose name, or else whose last part, starts with `prefix`."""
        from .db import symbol_sql  # here: a cold `get` never looks symbols up

        params = symbol_sql.prefix_params(prefix, limit)
        self._conn.execute("BEGIN")  # both lookups on one snapshot
        try:
            by_key = self._conn.execute(symbol_sql.BY_KEY, params).fetchall()
            by_leaf = []
            if symbol_sql.wants_leaf(by_key, limit):
                by_leaf = self._conn.execute(symbol_sql.BY_LEAF, params).fetchall()
        finally:
            self._conn.execute("COMMIT")
        return symbol_sql.merged(by_key, by_leaf, limit)

    def symbol_list(self) -> list[Symbol]:
        """Every symbol whose page is stored, one per name, by name."""
        from .db import symbol_sql  # here: a cold `get` never looks symbols up

        return symbol_sql.best(self._conn.execute(symbol_sql.ALL))

    def rebuild_symbols(self) -> int:
        """Derive the symbol index again (through the full Store)."""
        return self.full().rebuild_symbols()

    def facts(self, *, integrity: bool = False) -> StoreFacts:
        """Where the store is and its state (`integrity`: also run SQLite's quick_check)."""
        return StoreFacts(
            url=self.url,
            dialect="sqlite",
            revision=self.revision(),
            expected_revision=sql.SCHEMA_REVISION,
            journal_mode=self.journal_mode(),
            search_index=self.has_search_index(),
            integrity=tuple(self.integrity()) if integrity else None,
        )

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds (empty when healthy)."""
        rows = [r[0] for r in self._conn.execute(sql.QUICK_CHECK)]
        return [] if rows == ["ok"] else rows

    def journal_mode(self) -> str | None:
        """SQLite's journal mode in force (expected `wal`)."""
        return str(self._conn.execute(sql.JOURNAL_MODE).fetchone()[0])

    @property
    def recordings(self) -> ReaderRecordings:
        """Recorded searches and answers: read here, written through the full Store."""
        return ReaderRecordings(self)

    # -- everything else: the full Store ---------------------------------------------------

    @property
    def readonly(self) -> bool:
        """Opened read-only: the full Store, when needed, may not write either."""
        return self._readonly

    @property
    def buckets(self) -> Buckets:
        """Quota buckets shared by every process on the store (through the full Store)."""
        return self.full().buckets

    def semantic_state(self) -> VectorState | None:
        """The semantic index's model and generation, read here: a store that never built
        one keeps the cold path cheap."""
        row = self._conn.execute(sql.SEMANTIC_STATE).fetchone()
        if row is None:
            return None
        from .tables.vector_state import VectorState

        return VectorState(row[0], int(row[1]))

    def vector_rows(
        self, model_key: str
    ) -> tuple[VectorState | None, list[str], list[bytes], list[float]]:
        """The semantic index's current vectors, read here in one snapshot: a cold search with
        vectors on then never opens the full Store (importing SQLAlchemy alone costs more
        than the whole search)."""
        from .tables.vector_state import VectorState

        self._conn.execute("BEGIN")
        try:
            row = self._conn.execute(sql.SEMANTIC_STATE).fetchone()
            found = self._conn.execute(sql.CURRENT_VECTORS, {"key": model_key}).fetchall()
        finally:
            self._conn.execute("COMMIT")
        state = None if row is None else VectorState(row[0], int(row[1]))
        return state, [r[0] for r in found], [bytes(r[1]) for r in found], [r[2] for r in found]

    def passing(self, names: Sequence[str], where: Node) -> set[str]:
        """The names among `names` whose documents pass `where` (through the full Store)."""
        return self.full().passing(names, where)

    def semantic_facts(self, model_key: str) -> SemanticFacts:
        """The semantic index's state (through the full Store)."""
        return self.full().semantic_facts(model_key)

    def begin_vectors(
        self, model_key: str, *, rebuild: bool = False, names: Sequence[str] | None = None
    ) -> list[str]:
        """Turn the semantic index on (through the full Store)."""
        return self.full().begin_vectors(model_key, rebuild=rebuild, names=names)

    def write_vectors(
        self, model_key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
        """Store quantized vectors (through the full Store)."""
        self.full().write_vectors(model_key, docs, vectors)

    def put(self, docs: Iterable[Document], *, fetched_at: float, upstream: str) -> int:
        """Write documents (through the full Store)."""
        return self.full().put(docs, fetched_at=fetched_at, upstream=upstream)

    def put_stream(
        self, docs: Iterable[Document], *, fetched_at: float, upstream: str
    ) -> PutReport:
        """Write a stream of documents in one transaction (through the full Store)."""
        return self.full().put_stream(docs, fetched_at=fetched_at, upstream=upstream)

    def apply_stream(
        self, changes: Iterable[Document | str], *, fetched_at: float, upstream: str
    ) -> tuple[int, int]:
        """Upsert and delete from a stream in one transaction (through the full Store)."""
        return self.full().apply_stream(changes, fetched_at=fetched_at, upstream=upstream)

    def iter_documents(
        self,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
    ) -> Iterator[Document]:
        """Documents with content in name order, streamed (through the full Store)."""
        return self.full().iter_documents(prefix=prefix, data_source=data_source, names=names)

    def versions(self, name: str) -> list[Version]:
        """Every stored version of `name`, newest first (through the full Store)."""
        return self.full().versions(name)

    def as_of(
        self,
        at: float,
        *,
        names: Sequence[str] | None = None,
        prefix: str | None = None,
        data_source: str | None = None,
        content: bool = False,
        limit: int | None = None,
    ) -> AsOf:
        """Documents as the store held them at `at` (through the full Store)."""
        return self.full().as_of(
            at, names=names, prefix=prefix, data_source=data_source, content=content, limit=limit
        )

    def version_document(self, name: str, sha256: str) -> Document | None:
        """`name` as it was with content `sha256` (through the full Store)."""
        return self.full().version_document(name, sha256)

    def prune_versions(self, keep: int, names: Sequence[str] | None = None) -> int:
        """Drop versions beyond the newest `keep` (through the full Store)."""
        return self.full().prune_versions(keep, names)

    def refresh_stamps(self, prefix: str | None, checked_before: float | None) -> list[Stamp]:
        """Documents a refresh asks about (through the full Store)."""
        return self.full().refresh_stamps(prefix, checked_before)

    def changes(self, wanted: ChangeFilter) -> list[ChangeEvent]:
        """The change log's events `wanted` selects (through the full Store)."""
        return self.full().changes(wanted)

    def mark_checked(self, names: Sequence[str], at: float) -> None:
        """Count unchanged copies as fetched `at` (through the full Store)."""
        self.full().mark_checked(names, at)

    def mark_gone(self, names: Sequence[str], at: float) -> None:
        """Flag documents upstream no longer has (through the full Store)."""
        self.full().mark_gone(names, at)

    def clear_gone(self, names: Sequence[str]) -> None:
        """Drop gone flags (through the full Store)."""
        self.full().clear_gone(names)


class ReaderRecordings:
    """The Recordings interface over a Reader: lookups on sqlite3, the rest on the full Store."""

    def __init__(self, reader: Reader) -> None:
        self._reader = reader

    def _one(self, query: str, key: str) -> Any:
        return self._reader._conn.execute(query, {"key": key}).fetchone()

    def page(self, key: str) -> RecordedPage | None:
        """The recorded page for a request key, if any."""
        from .tables.recorded import recorded_page  # only offline search needs it

        return recorded_page(self._one(sql.RECORDED_PAGE, key))

    def answer(self, key: str) -> RecordedAnswer | None:
        """The recorded answer for a request key, if any."""
        from .tables.recorded import recorded_answer

        return recorded_answer(self._one(sql.RECORDED_ANSWER, key))

    def save_page(
        self, key: str, request: dict[str, Any], page: SearchPage, *, at: float, upstream: str
    ) -> None:
        """Record one upstream search page (through the full Store)."""
        self._reader.full().recordings.save_page(key, request, page, at=at, upstream=upstream)

    def note_metadata(self, docs: Sequence[Document], *, at: float, upstream: str) -> None:
        """Keep metadata seen in search results (through the full Store)."""
        self._reader.full().recordings.note_metadata(docs, at=at, upstream=upstream)

    def save_answer(
        self,
        key: str,
        request: dict[str, Any],
        answer: Answer,
        cited: dict[str, str | None],
        *,
        at: float,
        upstream: str,
    ) -> None:
        """Record an answer (through the full Store)."""
        self._reader.full().recordings.save_answer(
            key, request, answer, cited, at=at, upstream=upstream
        )

    def take_quota(self, bucket: str, period: str, limit: int) -> int | None:
        """Count one call if it fits under `limit` (through the full Store)."""
        return self._reader.full().recordings.take_quota(bucket, period, limit)
