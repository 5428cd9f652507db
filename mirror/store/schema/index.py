"""The local search index's tables: `search_docs` (PostgreSQL's tsvector index, schema_pg_index.py)
and, on SQLite, `search_changes`, the change log the tantivy index beside the store follows
(text_index.py).

Triggers on `documents` append a page's name to `search_changes` whenever it is written with
content, its title, description or text change, or it is deleted: in the writing transaction,
whoever writes (the store, a migration, the sqlite3 shell). Ids are AUTOINCREMENT, so the
last one handed out stays in sqlite_sequence even after the log is pruned: the index compares
it with the id it holds up to.

The Markdown is stored compressed on SQLite (compression.py): the change trigger compares
texts, not stored bytes, which another zlib build could pack differently for the same text
(index.changed compares hashes: the two must agree, or a change would go unlogged).

Both tables are plain SQL and exist on every database, so migrations and metadata agree
everywhere; the triggers are SQLite-only. Migration 0013 spells out the same statements;
tests/test_migrations.py compares them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Connection, ForeignKey, Integer, Table, Text, event

from ..db.sql import CHANGE_LOG
from . import pg_index as schema_pg_index
from .tables import NAME, metadata

search_docs = Table(
    "search_docs",
    metadata,
    # One row per indexed page on PostgreSQL (its tsvector columns: schema_pg_index.py);
    # empty on SQLite, whose index is the tantivy folder beside the store.
    Column("id", Integer, primary_key=True),
    Column(
        "name",
        NAME,
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_search_docs_document"),
        nullable=False,
        unique=True,
    ),
    # Heading lines of the Markdown (weighted above the body), and the side column's text
    # (mirror.search.lexical.side_text).
    Column("headings", Text, nullable=False),
    Column("side", Text, nullable=False),
    sqlite_autoincrement=True,
)

search_changes = Table(
    CHANGE_LOG,
    metadata,
    Column("id", Integer, primary_key=True),
    # No foreign key: a deleted page's name stays logged until the index has removed it.
    Column("name", NAME, nullable=False),
    sqlite_autoincrement=True,
)

# The text changed: its hash did, or (a write that bypassed the store and left the hash, or
# the same text packed differently by another zlib build) the stored values differ and so do
# the texts they hold. SQLite stops at the first true term: a re-put of unchanged pages
# (equal hashes, equal bytes) decompresses nothing.
TEXT_CHANGED = (
    "old.content_sha256 IS NOT new.content_sha256 OR (old.content IS NOT new.content "
    "AND dk_inflate(old.content) IS NOT dk_inflate(new.content))"
)
_LOG = f"INSERT INTO {CHANGE_LOG} (name) VALUES"
CREATE_TRIGGERS = (
    "CREATE TRIGGER search_log_insert AFTER INSERT ON documents "
    f"WHEN new.content IS NOT NULL BEGIN {_LOG} (new.name); END",
    "CREATE TRIGGER search_log_change AFTER UPDATE OF title, description, content ON documents "
    "WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    f"OR {TEXT_CHANGED} BEGIN {_LOG} (new.name); END",
    "CREATE TRIGGER search_log_delete AFTER DELETE ON documents "
    f"WHEN old.content IS NOT NULL BEGIN {_LOG} (old.name); END",
)
TRIGGERS = ("search_log_insert", "search_log_change", "search_log_delete")


@event.listens_for(search_changes, "after_create")
def _create_triggers(_target: Table, connection: Connection, **_kw: Any) -> None:
    # metadata.create_all builds what the migrations build (the change log's triggers exist
    # only on SQLite, tsvector only on PostgreSQL: schema_pg_index.py).
    if connection.dialect.name == "sqlite":
        for statement in CREATE_TRIGGERS:
            connection.exec_driver_sql(statement)


@event.listens_for(search_changes, "before_drop")
def _drop_triggers(_target: Table, connection: Connection, **_kw: Any) -> None:
    if connection.dialect.name == "sqlite":
        for trigger in TRIGGERS:
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {trigger}")


@event.listens_for(search_docs, "after_create")
def _create_pg_index(_target: Table, connection: Connection, **_kw: Any) -> None:
    if connection.dialect.name == "postgresql":
        for statement in schema_pg_index.CREATE:
            connection.exec_driver_sql(statement)


@event.listens_for(search_docs, "before_drop")
def _drop_pg_index(_target: Table, connection: Connection, **_kw: Any) -> None:
    if connection.dialect.name == "postgresql":
        for statement in schema_pg_index.DROP:
            connection.exec_driver_sql(statement)
