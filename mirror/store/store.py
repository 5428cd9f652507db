"""The local document store: SQLAlchemy Core over SQLite (default) or PostgreSQL.

The only package that imports SQLAlchemy. Writes go through Core statements built once
(SQLAlchemy caches their compiled form); the ORM measured about 10x slower for batched upserts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, bindparam, func, select, text

from ..errors import SchemaError, StoreError
from ..models import CachedDocument, Document
from . import engine as engines
from .failures import from_dbapi
from .rows import cached_document, document_row, upsert

if TYPE_CHECKING:
    from .index import LocalHit
    from .recordings import Recordings
from .schema import SCHEMA_REVISION, documents

# Registered on the shared metadata as a side effect, so `metadata` always describes every
# table the migrations create (cheap: table definitions only).
from . import schema_index, schema_recordings  # noqa: F401  isort: skip

_BY_NAMES = select(documents).where(documents.c.name.in_(bindparam("names", expanding=True)))
# get_documents asks for at most 20 names: one statement per count skips the per-call
# rendering of an expanding IN list, the largest SQLAlchemy cost on the cache-hit path.
_FIXED_KEYS = tuple(f"n{i}" for i in range(20))
_BY_COUNT = [
    select(documents).where(documents.c.name.in_([bindparam(k) for k in _FIXED_KEYS[:count]]))
    for count in range(len(_FIXED_KEYS) + 1)
]


@dataclass(frozen=True, slots=True)
class Summary:
    """One line of a listing: a document's metadata without its content."""

    name: str
    title: str | None
    data_source: str | None
    update_time: str | None
    content_length_bytes: int | None
    has_content: bool
    fetched_at: float


@dataclass(frozen=True, slots=True)
class Stats:
    """Counts and sizes for `dk-mirror status`."""

    documents: int
    with_content: int
    content_bytes: int
    oldest_fetch: float | None
    newest_fetch: float | None
    by_data_source: dict[str, int]


class Store:
    """Documents keyed by resource name, in one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = engines.display_url(engine)
        # Where failures name the store: an SQLite file's path, else the URL.
        self.where = engines.describe(engine.url)
        self._upsert = upsert(engine.dialect.name, documents, ["name"])
        # One held connection per thread for cache lookups: a pool checkout costs about as
        # much as reading 20 cached documents, and lookups are the hot path.
        self._local = threading.local()
        self._readers: list[Connection] = []
        self._readers_lock = threading.Lock()
        # On SQLite, lookups of up to 20 names run the Core statement's compiled SQL straight
        # on the held DBAPI connection: SQLAlchemy's per-execution bookkeeping otherwise costs
        # 40% of a 20-document lookup (bench/bench_get.py). Other databases use Core as usual.
        self._fast_sql: list[str] | None = None
        if engine.dialect.name == "sqlite":
            self._fast_sql = [str(stmt.compile(dialect=engine.dialect)) for stmt in _BY_COUNT]

    @classmethod
    def open(cls, url: str, *, upgrade: bool = True, readonly: bool = False) -> Store:
        """Open the store at `url`, upgrading its schema to this version's when needed.

        `readonly`: the store must already exist and be at this version's schema; it is
        opened read-only (works on a read-only file, folder or mount) and never upgraded.
        """
        store = cls(engines.create(url, readonly=readonly))
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
        from .migrate import upgrade as run_upgrade

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
        """Close the held read connections and every pooled connection."""
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for conn in readers:
            conn.close()
        self._local = threading.local()
        self.engine.dispose()

    @cached_property
    def recordings(self) -> Recordings:
        """Recorded searches and answers, and local quota counts."""
        from .recordings import Recordings

        return Recordings(self.engine, self._writer)

    def _reader(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None or conn.closed or conn.invalidated:
            conn = self.engine.connect()
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    def revision(self) -> str | None:
        """The schema revision stamped in the database (None when blank)."""
        from .migrate import current_revision

        with self.engine.connect() as conn:
            return current_revision(conn)

    def _writer(self) -> Connection:
        return self.engine.connect().execution_options(**{engines.WRITE: True})

    def get_many(self, names: Sequence[str]) -> dict[str, CachedDocument]:
        """Cached copies of `names` that exist, by name."""
        if not names:
            return {}
        rows: Sequence[Any]
        if self._fast_sql is not None and len(names) <= len(_FIXED_KEYS):
            # Autocommit read: SQLite runs the SELECT in its own implicit transaction.
            raw: Any = self._reader().connection.driver_connection
            try:
                rows = raw.execute(self._fast_sql[len(names)], tuple(names)).fetchall()
            except self.engine.dialect.loaded_dbapi.Error as exc:
                # Straight on the DBAPI, so SQLAlchemy's handle_error hook does not see it.
                raise from_dbapi(exc, self.where) from None
        else:
            with self.engine.connect() as conn:
                rows = conn.execute(_BY_NAMES, {"names": list(names)}).all()
        return {row[0]: cached_document(row) for row in rows}

    def put(self, docs: Iterable[Document], *, fetched_at: float, upstream: str) -> int:
        """Write documents (full content) in one transaction; returns how many."""
        docs = list(docs)
        rows = [document_row(doc, fetched_at, upstream) for doc in docs]
        if not rows:
            return 0
        with self._writer() as conn, conn.begin():
            # Same transaction: documents and their search index commit or roll back together.
            # A copy without content is "changed" too: its old chunks must go.
            # Imported here: the index (chunker, FTS SQL) is not needed to read documents,
            # and cold `dk-mirror get --offline` pays for every import.
            from . import index

            changed = index.changed(conn, docs)
            conn.execute(self._upsert, rows)
            index.reindex(conn, changed)
        return len(rows)

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Any = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index (`where`: a clause over documents)."""
        if not self.has_search_index():
            return []
        conn = self._reader()
        with conn.begin():  # one snapshot for the ranking and text lookups
            from . import index

            return index.search(conn, query, limit=limit, offset=offset, where=where)

    def chunk_text(self, name: str, chunk_id: str) -> str | None:
        """The text of one indexed chunk, or None."""
        if not self.has_search_index():
            return None
        with self.engine.connect() as conn:
            from . import index

            return index.chunk_text(conn, name, chunk_id)

    def has_search_index(self) -> bool:
        """Whether local full-text search is available (SQLite with the index built)."""
        found: bool | None = getattr(self, "_has_index", None)
        if found is None:
            with self.engine.connect() as conn:
                from . import index

                found = self._has_index = index.available(conn)
        return found

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None
    ) -> Iterator[Summary]:
        """Documents by name, optionally only those whose name starts with `prefix`."""
        query = select(
            documents.c.name,
            documents.c.title,
            documents.c.data_source,
            documents.c.update_time,
            documents.c.content_length_bytes,
            documents.c.content.is_not(None).label("has_content"),
            documents.c.fetched_at,
        ).order_by(documents.c.name)
        if prefix:
            # A range on the primary key uses its index, unlike LIKE (case rules, escapes).
            query = query.where(
                documents.c.name >= prefix, documents.c.name < prefix + "\U0010ffff"
            )
        if limit is not None:
            query = query.limit(limit)
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                yield Summary(*row)

    def iter_documents(
        self,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
    ) -> Iterator[Document]:
        """Documents with content in name order, streamed (for snapshots and exports)."""
        from .bulk import iter_documents

        return iter_documents(self, prefix=prefix, data_source=data_source, names=names)

    def apply_changes(
        self, put: Sequence[Document], remove: Sequence[str], *, fetched_at: float, upstream: str
    ) -> None:
        """Upsert `put` and delete `remove` in one transaction."""
        from .bulk import apply_changes

        apply_changes(self, put, remove, fetched_at=fetched_at, upstream=upstream)

    def filter_clause(self, node: Any) -> Any:
        """A parsed upstream filter (mirror.filters) as a WHERE clause over `documents`."""
        from .filter_sql import to_sql

        return to_sql(node, documents)

    def stats(self) -> Stats:
        """Counts, bytes and fetch times over the whole store."""
        c = documents.c
        with self.engine.connect() as conn:
            total, with_content, size, oldest, newest = conn.execute(
                select(
                    func.count(),
                    func.count(c.content),
                    func.coalesce(func.sum(c.content_length_bytes), 0),
                    func.min(c.fetched_at),
                    func.max(c.fetched_at),
                )
            ).one()
            by_source = conn.execute(
                select(c.data_source, func.count()).group_by(c.data_source).order_by(c.data_source)
            ).all()
        return Stats(
            documents=total,
            with_content=with_content,
            content_bytes=int(size),
            oldest_fetch=oldest,
            newest_fetch=newest,
            by_data_source={str(src): n for src, n in by_source},
        )

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds (empty when healthy; skipped elsewhere)."""
        if self.engine.dialect.name != "sqlite":
            return []
        with self.engine.connect() as conn:
            rows = [r[0] for r in conn.execute(text("PRAGMA quick_check"))]
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
            return str(conn.execute(text("PRAGMA journal_mode")).scalar())
