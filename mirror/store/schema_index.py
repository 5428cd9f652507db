"""The local search index: `chunks` (Core metadata) and its SQLite FTS5 table `chunks_fts`.

`chunks` is plain SQL and exists on every database, so migrations and metadata agree
everywhere; `chunks_fts` and the trigger that keeps it in step are SQLite-only (FTS5). On
other databases the chunks table stays empty and local search reports itself unavailable.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    event,
)

from .schema import metadata
from .sql import FTS_TABLE

chunks = Table(
    "chunks",
    metadata,
    # Also the rowid of the chunk's row in chunks_fts.
    Column("id", Integer, primary_key=True),
    Column(
        "name",
        String(500),
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_chunks_document"),
        nullable=False,
    ),
    # "c0", "c1", ...: the DocumentChunk id, unique within its document.
    Column("chunk_id", String(32), nullable=False),
    Column("ordinal", Integer, nullable=False),
    Column("heading", Text),
    # Its index also serves lookups by name (the leading column), so there is no separate one.
    UniqueConstraint("name", "ordinal", name="uq_chunks_name_ordinal"),
)

# Own content (not external content): FTS5 then deletes a row by rowid without us passing the
# old values back, and snippet() reads the text from its own table. The trigger removes a
# chunk's text with the chunk, so deleting a document (ON DELETE CASCADE) clears its index.
# Migration 0002 spells out the same statements; tests/test_migrations.py compares them.
CREATE_FTS = (
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5("
    'title, description, heading, body, tokenize = "unicode61 remove_diacritics 2")'
)
CREATE_TRIGGER = (
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
    f"DELETE FROM {FTS_TABLE} WHERE rowid = old.id; END"
)


@event.listens_for(chunks, "after_create")
def _create_fts(_target: Table, connection: Connection, **_kw: Any) -> None:
    # metadata.create_all builds what the migrations build (FTS5 exists only on SQLite).
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql(CREATE_FTS)
        connection.exec_driver_sql(CREATE_TRIGGER)


@event.listens_for(chunks, "before_drop")
def _drop_fts(_target: Table, connection: Connection, **_kw: Any) -> None:
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {FTS_TABLE}")
