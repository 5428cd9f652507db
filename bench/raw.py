"""The raw-write baseline shared by bench_import and bench_search: exactly the document rows
and index entries dk-mirror writes, derived before the clock starts, then written with bare
sqlite3 executemany (the store's pragmas, one IMMEDIATE transaction) and a bare tantivy writer
(the store's writer settings). It reads the store's row and entry functions, never replaces
any: what it times is the writes alone."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from mirror.models import Document
from mirror.store.db import compression
from mirror.store.db.rows import document_row
from mirror.store.schema.tables import documents
from mirror.store.textindex.sqlite import index as text_index
from mirror.store.textindex.sqlite.engine import entry
from mirror.store.textindex.sqlite.entries import Entry

COLUMNS = tuple(c.name for c in documents.columns)
INSERT_DOC = (
    f"INSERT OR REPLACE INTO documents ({','.join(COLUMNS)}) "
    f"VALUES ({','.join('?' * len(COLUMNS))})"
)

Row = tuple[object, ...]


def rows(docs: Iterable[Document]) -> list[Row]:
    """The documents table rows dk-mirror writes for `docs` (content compressed as stored)."""
    return [tuple(document_row(d, 0.0, "raw", packed=True).values()) for d in docs]


def entries(docs: Iterable[Document]) -> list[Entry]:
    """The search index entries dk-mirror writes for those of `docs` with content."""
    return [entry(doc) for doc in docs if doc.content]


def write(db: Path, doc_rows: list[Row], index_entries: list[Entry]) -> None:
    """executemany the rows into the migrated store `db` in one IMMEDIATE transaction, then
    index the entries in a tantivy folder beside it (none when the list is empty)."""
    conn = sqlite3.connect(db, isolation_level=None)
    compression.register(conn)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(INSERT_DOC, doc_rows)
    conn.execute("COMMIT")
    conn.close()
    if index_entries:
        folder = Path(f"{db}-raw-index")
        folder.mkdir()
        index = text_index.TextIndex(folder)._open()
        writer = index.writer(text_index.WRITER_HEAP, text_index.WRITER_THREADS)
        for row in index_entries:
            writer.add(row.name, row.document())
        writer.commit()
        writer.wait_merging_threads()
