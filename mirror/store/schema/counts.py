"""Kept counts: documents, documents with content and their bytes, per data source.

`status`, `doctor` and the web home page read these few rows instead of scanning every
document (a 1M-document store took seconds). On SQLite, triggers on `documents` keep them in
the same transaction as every write, whichever code path writes: put, import, snapshot import,
metadata noted from search results, delete. The table exists on every database so the schema
matches the migrations everywhere; elsewhere it stays empty and the stats scan `documents`.
The newest and oldest fetch come from the index on `documents.fetched_at`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Connection, Index, Integer, String, Table, event

from .tables import documents, metadata

document_counts = Table(
    "document_counts",
    metadata,
    # documents.data_source, '' for none (a primary key cannot hold NULL for the upsert).
    Column("data_source", String(255), primary_key=True),
    Column("documents", Integer, nullable=False),
    Column("with_content", Integer, nullable=False),
    # Sum of content_length_bytes over the rows (as `status` always summed it).
    Column("content_bytes", Integer, nullable=False),
)

# min/max(fetched_at) in a few page reads instead of a scan of every row.
fetched_at_index = Index("ix_documents_fetched_at", documents.c.fetched_at)


def _add(row: str, sign: str) -> str:
    # One upsert adding (or, sign "-", taking away) `row`'s contribution to its source's counts.
    return (
        "INSERT INTO document_counts (data_source, documents, with_content, content_bytes) "
        f"VALUES (coalesce({row}.data_source, ''), {sign}1, "
        f"{sign}({row}.content IS NOT NULL), {sign}coalesce({row}.content_length_bytes, 0)) "
        "ON CONFLICT (data_source) DO UPDATE SET "
        "documents = documents + excluded.documents, "
        "with_content = with_content + excluded.with_content, "
        "content_bytes = content_bytes + excluded.content_bytes;"
    )


# Migration 0008 spells out the same statements; tests/test_migrations.py compares them.
# An upsert's DO UPDATE fires the UPDATE trigger only (never INSERT and DELETE), and the store
# never uses INSERT OR REPLACE, whose implicit delete fires no trigger.
CREATE_TRIGGERS = (
    f"CREATE TRIGGER document_counts_insert AFTER INSERT ON documents BEGIN {_add('new', '')} END",
    f"CREATE TRIGGER document_counts_delete AFTER DELETE ON documents BEGIN {_add('old', '-')} END",
    "CREATE TRIGGER document_counts_update AFTER UPDATE OF data_source, content, "
    f"content_length_bytes ON documents BEGIN {_add('old', '-')} {_add('new', '')} END",
)
TRIGGERS = ("document_counts_insert", "document_counts_delete", "document_counts_update")


@event.listens_for(metadata, "after_create")
def _create_triggers(_target: Any, connection: Connection, tables: Any = (), **_kw: Any) -> None:
    # metadata.create_all builds what the migrations build (the triggers only on SQLite), once
    # both tables exist: create_all may make document_counts before documents.
    names = {t.name for t in tables}
    if connection.dialect.name == "sqlite" and {"documents", "document_counts"} <= names:
        for statement in CREATE_TRIGGERS:
            connection.exec_driver_sql(statement)
