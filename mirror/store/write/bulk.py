"""Whole-store operations for snapshots and locks: stream documents in name order, apply changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from sqlalchemy import Connection, Engine, delete, select

from ...models import Document
from ..db import engine as engines
from ..db import turns
from ..db.rows import cached_document
from ..schema.tables import documents
from ..tables import changes, vectors, versions

# Rows fetched per round trip while streaming; bounds memory for 50,000-document stores.
STREAM_BATCH = 500
# Names of changed documents a bulk write reports to the store's watcher, at most: the
# service embeds up to 100 a write by itself (service/semantic.AUTO_EMBED) and leaves more to
# `dk-mirror index update`, so past this it only needs to know there were more.
REPORTED = 101
# Writes a batch of documents in the caller's transaction (history, upsert, search index,
# stale vectors: Store._write_batch); returns the names it changed.
WriteBatch = Callable[[Connection, list[Document], float, str], list[str]]


def iter_documents(
    engine: Engine,
    *,
    prefix: str | None = None,
    data_source: str | None = None,
    names: Sequence[str] | None = None,
) -> Iterator[Document]:
    """Documents that have content, in name order, optionally narrowed; streamed."""
    query = select(documents).where(documents.c.content.is_not(None)).order_by(documents.c.name)
    if prefix:
        query = query.where(documents.c.name >= prefix, documents.c.name < prefix + "\U0010ffff")
    if data_source:
        query = query.where(documents.c.data_source == data_source)
    if names is not None:
        wanted = sorted(set(names))
        # Chunks of names keep each IN list within SQLite's variable limit.
        for start in range(0, len(wanted), STREAM_BATCH):
            part = query.where(documents.c.name.in_(wanted[start : start + STREAM_BATCH]))
            with engine.connect() as conn:
                rows = conn.execute(part).all()
            yield from (cached_document(row).document for row in rows)
        return
    with engine.connect() as conn:
        result = conn.execution_options(yield_per=STREAM_BATCH).execute(query)
        for row in result:
            yield cached_document(row).document


def apply_stream(
    writer: Callable[[], Connection],
    write: WriteBatch,
    changes: Iterable[Document | str],
    *,
    fetched_at: float,
    upstream: str,
) -> tuple[int, int, list[str]]:
    """Upsert the documents (through `write`) and delete the names (tombstones) of `changes`,
    streamed, in ONE transaction on a `writer` connection: an exception from `changes` rolls
    all of it back. Returns (written, removed, the names changed, as Changed keeps them).

    Memory holds one batch of each, whatever the length of the stream.
    """
    written = removed = 0
    put: list[Document] = []
    gone: list[str] = []
    changed = Changed()
    with writer() as conn, engines.bulk_write(conn), conn.begin():
        turns.take_store(conn, alone=True)  # a file's order is no order: see turns.py
        for change in changes:
            if isinstance(change, str):
                gone.append(change)
            else:
                put.append(change)
            if len(put) >= STREAM_BATCH:
                changed.add(_put(write, conn, put, fetched_at, upstream))
                written, put = written + len(put), []
            if len(gone) >= STREAM_BATCH:
                removed += _remove(conn, gone, fetched_at)
                gone = []
        changed.add(_put(write, conn, put, fetched_at, upstream))
        written += len(put)
        removed += _remove(conn, gone, fetched_at)
    return written, removed, changed.names


class Changed:
    """Names a bulk write changed, the first REPORTED of them, so memory stays bounded."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def add(self, names: list[str]) -> None:
        if len(self.names) < REPORTED:
            self.names.extend(names[: REPORTED - len(self.names)])


def _put(
    write: WriteBatch, conn: Connection, docs: list[Document], fetched_at: float, upstream: str
) -> list[str]:
    # The one write path of every put: history, upsert, search index, stale vectors.
    return write(conn, docs, fetched_at, upstream) if docs else []


def _remove(conn: Connection, names: list[str], at: float) -> int:
    if names:
        changes.record_removals(conn, names, at)  # in the deletion's transaction
        versions.retire(conn, names)  # history outlives a deletion
        vectors.forget(conn, names)  # and a loaded vector matrix learns they are gone
        # Their index entries go by the trigger on documents (schema_index.py).
        conn.execute(delete(documents).where(documents.c.name.in_(names)))
    return len(names)
