"""The local document store: SQLAlchemy Core over SQLite (default) or PostgreSQL.

The only package that imports SQLAlchemy. Writes go through Core statements built once
(SQLAlchemy caches their compiled form); the ORM measured about 10x slower for batched upserts.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, bindparam, select, text
from sqlalchemy.pool import PoolProxiedConnection

from ..config import DEFAULT_KEEP_VERSIONS
from ..errors import SchemaError, StoreError
from ..models import (
    AsOf,
    CachedDocument,
    Document,
    PutReport,
    Stamp,
    Stats,
    StoreFacts,
    Summary,
    Version,
)
from .db import engine as engines
from .db import sql, turns
from .db.failures import from_dbapi
from .db.generation import GenerationProbe, probe_for
from .db.rows import cached_document, upsert
from .searching import Searching
from .symbol_index import SymbolIndex
from .textindex.choose import engine_for
from .write.prepared import PREPARED_AHEAD, PUT_BATCH, PUT_BATCH_CHARS, Prepared, prepare
from .write.prepared import batches as in_batches

if TYPE_CHECKING:
    from ..changes.events import ChangeEvent, ChangeFilter
    from ..search.filters import Node
    from .tables.buckets import Buckets
    from .tables.crawls import Crawls
    from .tables.recordings import Recordings
    from .tables.vector_state import SemanticFacts, VectorState
    from .tables.vectors import Vectors
    from .textindex.api import Indexing
# Registered on the shared metadata as a side effect, so `metadata` always describes every
# table the migrations create (cheap: table definitions only).
from .schema.tables import SCHEMA_REVISION, documents

from .schema import counts as _counts, crawl as _crawl  # noqa: F401  isort: skip
from .schema import embeddings as _embeddings, index as _index  # noqa: F401  isort: skip
from .schema import recordings as _recordings, versions as _versions  # noqa: F401  isort: skip
from .schema import changes as _changes  # noqa: F401  isort: skip
from .schema import symbols as _symbols  # noqa: F401  isort: skip

_BY_NAMES = select(documents).where(documents.c.name.in_(bindparam("names", expanding=True)))
# Pooled connections beyond a server's worker threads: a writer's, and the event loop's.
POOL_RESERVE = 2


class Store(Searching, SymbolIndex):
    """Documents keyed by resource name, in one database."""

    def __init__(self, engine: Engine, *, keep_versions: int = DEFAULT_KEEP_VERSIONS) -> None:
        self.engine = engine
        # Versions of a document kept in its history; a write beyond them drops the oldest.
        self.keep_versions = keep_versions
        self.url = engines.display_url(engine)
        # Where failures name the store: an SQLite file's path, else the URL.
        self.where = engines.describe(engine.url)
        self._upsert = upsert(engine.dialect.name, documents, ["name"])
        # Idle connections for cache lookups, shared by every thread: a pool checkout and
        # return (~16 us) is avoidable overhead on the hot path, a deque pop is not. A lookup
        # takes one for the length of its query only, so a thread that goes idle (or exits)
        # never keeps a connection another request is waiting for. At most `_idle_cap` stay.
        self._idle: deque[PoolProxiedConnection] = deque()
        self._idle_cap = engines.SQLITE_POOL_SIZE
        # On SQLite, lookups of up to 20 names run sql.BY_NAMES (the Reader's text too) straight
        # on the held DBAPI connection: SQLAlchemy's per-execution bookkeeping otherwise costs
        # 40% of a 20-document lookup (bench/bench_get.py). Other databases use Core as usual.
        self._fast_sql = engine.dialect.name == "sqlite"
        # An in-memory SQLite database is one per thread (SQLAlchemy's SingletonThreadPool):
        # put_stream then reads and prepares in the writer's thread.
        self._one_thread = engines.one_thread(engine)
        self.readonly = False  # set by open(): a resized engine must open the same way
        # Opened on first use by generation(): only a server's answer cache asks.
        self._probe: GenerationProbe | None = None
        self._probe_lock = threading.Lock()
        self._probe_opened = False
        # Told the names each write changed, after its commit (the service embeds them).
        self._watchers: list[Callable[[list[str]], None]] = []
        # Local search, chosen once for this database: SQLite's tantivy index beside the file
        # (opened on first need), or PostgreSQL's tsvector columns.
        self.text = engine_for(engine, lambda: self.engine, self._writer)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        upgrade: bool = True,
        readonly: bool = False,
        keep_versions: int = DEFAULT_KEEP_VERSIONS,
    ) -> Store:
        """Open the store at `url`, upgrading its schema to this version's when needed.

        `readonly`: the store must already exist and be at this version's schema; it is
        opened read-only (works on a read-only file, folder or mount) and never upgraded.
        `keep_versions`: how many versions of each document its history keeps.
        """
        store = cls(engines.create(url, readonly=readonly), keep_versions=keep_versions)
        store.readonly = readonly
        try:
            revision = store.revision()
            if revision != SCHEMA_REVISION:
                store._adopt(url, revision, upgrade=upgrade, readonly=readonly)
        except BaseException:
            store.close()
            raise
        return store

    def _adopt(self, url: str, revision: str | None, *, upgrade: bool, readonly: bool) -> None:
        """Bring a store at another revision to this version's, or say why it cannot be."""
        if readonly and revision is None:
            raise StoreError(
                f"{self.where} is not a dk-mirror store (no schema revision in it)",
                hint="point --db / DK_MIRROR_DB at a store dk-mirror created",
            )
        if not upgrade or (readonly and not engines.writable(url)):
            locked = " and it is read-only" if upgrade else ""
            raise SchemaError(
                f"the store is at schema revision {revision!r}; "
                f"this version needs {SCHEMA_REVISION!r}{locked}",
                hint="run `dk-mirror db upgrade`"
                + (" where the store is writable" if locked else ""),
            )
        from .db.migrate import upgrade as run_upgrade

        if not readonly:
            run_upgrade(self.engine)
            return
        # A reading command on a writable store upgrades it as any command always has; the
        # upgrade alone gets a read-write engine, and reads stay on the read-only one.
        writer = engines.create(url)
        try:
            run_upgrade(writer)
        finally:
            writer.dispose()

    def close(self) -> None:
        """Close the idle read connections and every pooled connection (after indexing the
        last commits' changes)."""
        self.text.close()
        self._close_idle()
        with self._probe_lock:
            if self._probe is not None:
                self._probe.close()
            self._probe, self._probe_opened = None, False
        self.engine.dispose()

    def generation(self) -> int | None:
        """A number that changes whenever anyone (any connection, any process) commits to
        this store; None when it cannot tell (not an SQLite file, or unreadable right now)."""
        if not self._probe_opened:
            with self._probe_lock:
                if not self._probe_opened:
                    self._probe = probe_for(self.engine)
                    self._probe_opened = True
        probe = self._probe
        return probe() if probe is not None else None

    def size_for(self, concurrency: int) -> None:
        """Keep connections for `concurrency` threads using the store at once (a server's workers).

        Call before the threads start: the engine is rebuilt with a pool of that size (plus a
        writer's and the event loop's), so no request waits on the pool at that concurrency.
        """
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self._close_idle()
        self._idle_cap = concurrency
        old, self.engine = (
            self.engine,
            engines.create(
                self.engine.url, pool_size=concurrency + POOL_RESERVE, readonly=self.readonly
            ),
        )
        for held in ("recordings", "buckets", "crawls"):  # they hold the old engine
            self.__dict__.pop(held, None)
        self.text.watch(self.engine)
        old.dispose()
        if self._fast_sql and not self._one_thread:
            # A server's searches do not wait minutes for a damaged index to be rebuilt: it is
            # rebuilt on a thread of its own while they say so (textindex/sqlite/repair.py).
            self.text_index().serve(lambda: self.engine.raw_connection())

    def _close_idle(self) -> None:
        while self._idle:
            try:
                self._idle.pop().close()
            except IndexError:  # another thread took the last one
                break

    @cached_property
    def recordings(self) -> Recordings:
        """Recorded searches and answers, and local quota counts."""
        from .tables.recordings import Recordings

        return Recordings(self.engine, self._writer)

    @cached_property
    def crawls(self) -> Crawls:
        """Crawl frontiers and names upstream does not have."""
        from .tables.crawls import Crawls

        # A crawl's batch writes its documents in its own transaction: hand it the writer.
        return Crawls(self.engine, self._writer, self._write_batch)

    @cached_property
    def vectors(self) -> Vectors:
        """The semantic index's vectors (it follows a resized engine)."""
        from .tables.vectors import Vectors

        return Vectors(lambda: self.engine, self._writer)

    @cached_property
    def buckets(self) -> Buckets:
        """Quota buckets shared by every process pacing its upstream calls on this store."""
        from .tables.buckets import Buckets

        return Buckets(self.engine, self._writer)

    def full(self) -> Store:
        """This Store (a Reader opens one for what it does not do itself)."""
        return self

    def revision(self) -> str | None:
        """The schema revision stamped in the database (None when blank)."""
        from .db.migrate import current_revision

        with self.engine.connect() as conn:
            return current_revision(conn)

    def _writer(self) -> Connection:
        return self.engine.connect().execution_options(**{engines.WRITE: True})

    def get_many(self, names: Sequence[str]) -> dict[str, CachedDocument]:
        """Cached copies of `names` that exist, by name."""
        if not names:
            return {}
        rows: Sequence[Any]
        if self._fast_sql and len(names) <= sql.MAX_FIXED_NAMES:
            # deque.pop/append are atomic: no lock on the hot path.
            try:
                pooled = self._idle.pop()
            except IndexError:
                pooled = self.engine.raw_connection()
            try:
                # Autocommit read: SQLite runs the SELECT in its own implicit transaction.
                raw: Any = pooled.driver_connection
                rows = raw.execute(sql.BY_NAMES[len(names)], tuple(names)).fetchall()
            except BaseException as exc:
                pooled.close()  # back to the pool, which resets or discards it
                if isinstance(exc, self.engine.dialect.loaded_dbapi.Error):
                    # Straight on the DBAPI, so SQLAlchemy's handle_error hook does not see it.
                    raise from_dbapi(exc, self.where) from None
                raise
            if len(self._idle) < self._idle_cap:
                self._idle.append(pooled)
            else:
                pooled.close()
        else:
            with self.engine.connect() as conn:
                rows = conn.execute(_BY_NAMES, {"names": list(names)}).all()
        return {row[0]: cached_document(row) for row in rows}

    def put(self, docs: Iterable[Document], *, fetched_at: float, upstream: str) -> int:
        """Write documents (full content) in one transaction; returns how many."""
        docs = list(docs)
        if not docs:
            return 0
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                changed = self._write_batch(conn, docs, fetched_at, upstream)
        self._refresh_vectors(changed)
        return len(docs)

    def put_stream(
        self, docs: Iterable[Document], *, fetched_at: float, upstream: str
    ) -> PutReport:
        """Write a stream of documents in ONE transaction, PUT_BATCH at a time; all or nothing.

        Memory holds a few batches, not the stream: a thread of its own reads `docs` and
        prepares each batch's rows while this one writes the previous batch. An exception from
        `docs` (a bad line in an import file) rolls back everything already written. A name
        seen again replaces its earlier copy and is counted once.
        """
        from .write.ahead import Ahead
        from .write.bulk import Changed
        from .write.seen_names import SeenNames

        changed = Changed()
        total = 0
        batches = self._prepared(docs, fetched_at, upstream)
        with (
            SeenNames() as seen,
            self.text.bulk() as indexing,
            self._writer() as conn,
            engines.bulk_write(conn),
            conn.begin(),
            Ahead(
                batches, 0 if self._one_thread else PREPARED_AHEAD, name="import-prepare"
            ) as ready,
        ):
            turns.take_store(conn, alone=True)  # a file's order is no order: see turns.py
            for batch in ready:
                changed.add(self._write_prepared(conn, batch, indexing))
                seen.add(d.name for d in batch.docs)
                total += len(batch.docs)
            indexing.finish(conn)
        self._refresh_vectors(changed.names)
        return PutReport(documents=seen.count, duplicates=total - seen.count)

    def _prepared(
        self, docs: Iterable[Document], fetched_at: float, upstream: str
    ) -> Iterator[Prepared]:
        """Batches of `docs`, prepared; run by put_stream's reading thread, which reads the
        store on a connection of its own to derive only the index entries likely needed."""
        from .write.ahead import close_source

        pooled = self.engine.raw_connection() if self._fast_sql and not self._one_thread else None
        batches = in_batches(docs, PUT_BATCH, PUT_BATCH_CHARS)
        try:
            raw = pooled.driver_connection if pooled is not None else None
            for batch in batches:
                yield prepare(batch, fetched_at, upstream, raw)
        finally:
            # On a failure the traceback holds these frames: close the input file now.
            close_source(batches)
            close_source(docs)
            if pooled is not None:
                pooled.close()

    def _write_batch(
        self, conn: Connection, docs: list[Document], fetched_at: float, upstream: str
    ) -> list[str]:
        """Upsert `docs` and reindex those that changed; returns the changed names."""
        return self._write_prepared(conn, prepare(docs, fetched_at, upstream))

    def _write_prepared(
        self, conn: Connection, batch: Prepared, indexing: Indexing | None = None
    ) -> list[str]:
        # Imported here: cold `dk-mirror get --offline` pays for every import.
        from .tables import changes, symbols, vectors, versions

        # Same transaction: documents, their history, change log and search index commit or
        # roll back together. A copy without content is "changed" too: its old chunks must go.
        # `indexing`: a bulk write's hold on the index, else the index as any write keeps it.
        index = indexing or self.text
        docs = batch.docs
        # Before anything of them is read: another writer of the same pages waits its turn.
        turns.take_pages(conn, (doc.name for doc in docs))
        changed = index.changed(conn, docs, batch.hashes)
        # Before the upsert: the log compares with (and classifies against) the stored copy.
        events = changes.planned(conn, docs, batch.hashes, batch.fetched_at)
        versions.record(
            conn, docs, batch.fetched_at, batch.upstream, self.keep_versions, batch.hashes
        )
        conn.execute(self._upsert, batch.rows)
        index.reindex(conn, changed, batch.entries)
        # A page's symbols change with its content, never later.
        symbols.replace(conn, changed, batch.symbol_rows)
        names = [doc.name for doc in changed]
        vectors.forget(conn, names)
        changes.append(conn, events)  # last: see turns.take_log
        return names

    def on_written(self, watcher: Callable[[list[str]], None]) -> None:
        """Call `watcher` with the names each write changed, after its commit (a bulk write:
        the first write.bulk.REPORTED of them)."""
        self._watchers.append(watcher)

    def _refresh_vectors(self, names: list[str]) -> None:
        # After the commit, never inside it: embedding takes ~0.1 s a document.
        if names:
            for watcher in self._watchers:
                watcher(names)

    def semantic_facts(self, model_key: str) -> SemanticFacts:
        """The semantic index's model, current vectors and documents waiting for one."""
        return self.vectors.facts(model_key)

    def semantic_state(self) -> VectorState | None:
        """The semantic index's model and generation (None: never built)."""
        return self.vectors.state()

    def vector_rows(
        self, model_key: str
    ) -> tuple[VectorState | None, list[str], list[bytes], list[float]]:
        """The semantic index's state and current vectors of `model_key`, in name order."""
        return self.vectors.rows(model_key)

    def begin_vectors(
        self, model_key: str, *, rebuild: bool = False, names: Sequence[str] | None = None
    ) -> list[str]:
        """Turn the semantic index on for `model_key`; the documents waiting for a vector."""
        return self.vectors.begin(model_key, rebuild=rebuild, names=names)

    def write_vectors(
        self, model_key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
        """Store the quantized vectors of `docs` for `model_key`, in one transaction."""
        self.vectors.write(model_key, docs, vectors)

    def passing(self, names: Sequence[str], where: Node) -> set[str]:
        """The names among `names` whose documents pass the filter `where`."""
        from .db.filter_sql import to_sql

        return self.vectors.passing(names, to_sql(where, documents))

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None, *, content_only: bool = False
    ) -> Iterator[Summary]:
        """Documents by name, optionally only those whose name starts with `prefix`
        (`content_only`: leave out metadata-only rows noted from search results)."""
        query = text(
            sql.listing(prefix=bool(prefix), limit=limit is not None, content_only=content_only)
        )
        with self.engine.connect() as conn:
            for row in conn.execute(query, sql.listing_params(prefix, limit)):
                yield sql.summary(row)

    def iter_documents(
        self,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
    ) -> Iterator[Document]:
        """Documents with content in name order, streamed (for snapshots and exports)."""
        from .write.bulk import iter_documents

        return iter_documents(self.engine, prefix=prefix, data_source=data_source, names=names)

    def versions(self, name: str) -> list[Version]:
        """Every stored version of `name`, newest first, the current one marked."""
        from .tables import versions

        with self.engine.connect() as conn, conn.begin():
            return versions.versions(conn, name)

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
        """Documents as the store held them at `at` (from the kept history), and the names
        whose version of then was pruned."""
        from .tables import asof

        with self.engine.connect() as conn, conn.begin():
            return asof.read(
                conn, at, names=names, prefix=prefix, data_source=data_source,
                content=content, limit=limit,
            )  # fmt: skip

    def version_document(self, name: str, sha256: str) -> Document | None:
        """`name` as it was with content `sha256` (hex), from its history; None if not kept."""
        from .tables import versions

        with self.engine.connect() as conn, conn.begin():
            return versions.version_document(conn, name, sha256)

    def changes(self, wanted: ChangeFilter) -> list[ChangeEvent]:
        """The change log's events `wanted` selects, newest first."""
        from .tables import changes

        with self.engine.connect() as conn:
            return changes.read(conn, wanted)

    def prune_versions(self, keep: int, names: Sequence[str] | None = None) -> int:
        """Keep the newest `keep` versions of each document (of `names`); returns how many
        versions were dropped."""
        from .tables import versions

        dropped = 0
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                turns.take_store(conn, alone=False)
                dropped = versions.prune(conn, keep, names)
        return dropped

    def refresh_stamps(self, prefix: str | None, checked_before: float | None) -> list[Stamp]:
        """Documents with content (under `prefix`) last checked before `checked_before`."""
        from .tables import versions

        with self.engine.connect() as conn:
            return versions.stamps(conn, prefix, checked_before)

    def mark_checked(self, names: Sequence[str], at: float) -> None:
        """Upstream has `names` unchanged: count their copies as fetched `at` (content kept)."""
        from .tables import versions

        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                turns.take_pages(conn, names)
                versions.mark_checked(conn, names, at)

    def mark_gone(self, names: Sequence[str], at: float) -> None:
        """Upstream no longer has `names`: flag them, keep their copies."""
        from .tables import versions

        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                turns.take_pages(conn, names)
                versions.mark_gone(conn, names, at)

    def clear_gone(self, names: Sequence[str]) -> None:
        """Upstream has `names` again: drop their gone flags."""
        from .tables import versions

        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                turns.take_pages(conn, names)
                versions.clear_gone(conn, names)

    def apply_stream(
        self, changes: Iterable[Document | str], *, fetched_at: float, upstream: str
    ) -> tuple[int, int]:
        """Upsert documents and delete names (tombstones) from a stream, in one transaction;
        returns (written, removed)."""
        from .write.bulk import apply_stream

        written, removed, changed = apply_stream(
            self._writer, self._write_batch, changes, fetched_at=fetched_at, upstream=upstream
        )
        self._refresh_vectors(changed)
        return written, removed

    def stats(self) -> Stats:
        """Counts, bytes and fetch times over the whole store."""
        # Kept by triggers on SQLite; counted from documents elsewhere (schema_counts.py).
        kept = sql.STATS_KEPT if self.engine.dialect.name == "sqlite" else sql.STATS_COUNTED
        # One read transaction: the counts and fetch times of the same moment.
        with self.engine.connect() as conn, conn.begin():
            by_source = conn.execute(text(kept)).all()
            fetched = conn.execute(text(sql.STATS_FETCHED)).one()
        return sql.stats(by_source, fetched)

    def facts(self, *, integrity: bool = False) -> StoreFacts:
        """Where the store is and its state (`integrity`: also run SQLite's quick_check)."""
        return StoreFacts(
            url=self.url,
            dialect=self.engine.dialect.name,
            revision=self.revision(),
            expected_revision=SCHEMA_REVISION,
            journal_mode=self.journal_mode(),
            search_index=self.has_search_index(),
            integrity=tuple(self.integrity()) if integrity else None,
            immutable=self.immutable,
        )

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds (empty when healthy; skipped elsewhere)."""
        if self.engine.dialect.name != "sqlite":
            return []
        with self.engine.connect() as conn:
            rows = [r[0] for r in conn.execute(text(sql.QUICK_CHECK))]
        return [] if rows == ["ok"] else rows

    @property
    def immutable(self) -> bool:
        """Opened immutable (a read-only folder): SQLite reads the file alone, lock-free."""
        return self.engine.url.query.get("immutable") == "1"

    def journal_mode(self) -> str | None:
        """SQLite's journal mode in force (expected `wal`), or None for other databases."""
        if self.engine.dialect.name != "sqlite":
            return None
        with self.engine.connect() as conn:
            return str(conn.execute(text(sql.JOURNAL_MODE)).scalar())
