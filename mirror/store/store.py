"""The local document store: SQLAlchemy Core over SQLite (default) or PostgreSQL.

The only package that imports SQLAlchemy. Writes go through Core statements built once
(SQLAlchemy caches their compiled form); the ORM measured about 10x slower for batched upserts.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, bindparam, func, select, text
from sqlalchemy.exc import DBAPIError

from ..errors import SchemaError, StoreError
from ..models import CachedDocument, Document, Stats, StoreFacts, Summary
from . import engine as engines
from .rows import cached_document, document_row, upsert

if TYPE_CHECKING:
    from ..search.filters import Node
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


class Store:
    """Documents keyed by resource name, in one database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.url = engine.url.render_as_string(hide_password=True)
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
    def open(cls, url: str, *, upgrade: bool = True) -> Store:
        """Open the store at `url`, upgrading its schema to this version's when needed."""
        store = cls(engines.create(url))
        try:
            revision = store.revision()
        except DBAPIError as exc:
            store.close()
            raise StoreError(
                f"cannot open the store at {store.url}: {exc.orig}",
                hint="check the path or URL given by --db / DK_MIRROR_DB",
            ) from None
        if revision != SCHEMA_REVISION:
            if not upgrade:
                store.close()
                raise SchemaError(
                    f"the store is at schema revision {revision!r}; "
                    f"this version needs {SCHEMA_REVISION!r}",
                    hint="run `dk-mirror db upgrade`",
                )
            from .migrate import upgrade as run_upgrade

            run_upgrade(store.engine)
        return store

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
            rows = raw.execute(self._fast_sql[len(names)], tuple(names)).fetchall()
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
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index (`where`: a parsed upstream filter)."""
        if not self.has_search_index():
            return []
        from . import index
        from .filter_sql import to_sql

        clause = to_sql(where, documents) if where is not None else None
        conn = self._reader()
        with conn.begin():  # one snapshot for the ranking and text lookups
            return index.search(conn, query, limit=limit, offset=offset, where=clause)

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
        self, prefix: str | None = None, limit: int | None = None, *, content_only: bool = False
    ) -> Iterator[Summary]:
        """Documents by name, optionally only those whose name starts with `prefix`
        (`content_only`: leave out metadata-only rows noted from search results)."""
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
        if content_only:
            query = query.where(documents.c.content.is_not(None))
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
        )

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds (empty when healthy; skipped elsewhere)."""
        if self.engine.dialect.name != "sqlite":
            return []
        with self.engine.connect() as conn:
            rows = [r[0] for r in conn.execute(text("PRAGMA quick_check"))]
        return [] if rows == ["ok"] else rows

    def journal_mode(self) -> str | None:
        """SQLite's journal mode in force (expected `wal`), or None for other databases."""
        if self.engine.dialect.name != "sqlite":
            return None
        with self.engine.connect() as conn:
            return str(conn.execute(text("PRAGMA journal_mode")).scalar())
