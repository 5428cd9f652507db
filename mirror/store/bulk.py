"""Whole-store operations for snapshots and locks: stream documents in name order, apply changes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from ..models import Document
from . import index, vectors
from .rows import cached_document, document_row
from .schema import documents

if TYPE_CHECKING:
    from .store import Store

# Rows fetched per round trip while streaming; bounds memory for 50,000-document stores.
STREAM_BATCH = 500


def iter_documents(
    store: Store,
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
            with store.engine.connect() as conn:
                rows = conn.execute(part).all()
            yield from (cached_document(row).document for row in rows)
        return
    with store.engine.connect() as conn:
        result = conn.execution_options(yield_per=STREAM_BATCH).execute(query)
        for row in result:
            yield cached_document(row).document


def apply_changes(
    store: Store,
    put: Sequence[Document],
    remove: Sequence[str],
    *,
    fetched_at: float,
    upstream: str,
) -> None:
    """Write `put` and delete `remove` in ONE transaction: all of it lands, or none."""
    with store._writer() as conn, conn.begin():
        if put:
            conn.execute(store._upsert, [document_row(doc, fetched_at, upstream) for doc in put])
            index.reindex(conn, put)
        # Vectors of every touched document go in this transaction; new ones after it.
        vectors.forget(conn, [doc.name for doc in put] + list(remove))
        for start in range(0, len(remove), STREAM_BATCH):
            part = list(remove[start : start + STREAM_BATCH])
            # Chunks go by ON DELETE CASCADE, and their FTS rows by the chunks trigger.
            conn.execute(delete(documents).where(documents.c.name.in_(part)))
    store._refresh_vectors([doc.name for doc in put])
