"""The tables, as SQLAlchemy Core metadata. Alembic migrations create exactly these."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Dialect, Float, Integer, MetaData, String, Table, Text
from sqlalchemy.types import TypeDecorator

from ..db.compression import deflate, inflate
from ..db.sql import SCHEMA_REVISION

__all__ = ["NAME", "SCHEMA_REVISION", "Markdown", "documents", "metadata"]

metadata = MetaData()

# A document's resource name. On PostgreSQL in the "C" collation (migration 0010): names
# compare by code point there as in SQLite and Python, whatever the database's locale, so
# listings, prefix ranges and snapshot order are the same on both.
NAME = String(500).with_variant(String(500, collation="C"), "postgresql")


class Markdown(TypeDecorator[str]):
    """A document's Markdown: TEXT in the schema, written zlib-compressed on SQLite
    (compression.py) and read back as text from either form; plain on PostgreSQL.

    Every Core read and write of the content columns goes through it (copying a store between
    backends included); raw sqlite3 reads call compression.inflate themselves."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | bytes | None, dialect: Dialect) -> Any:
        if dialect.name == "sqlite":
            # bytes: packed already (rows.document_row(packed=True)).
            return deflate(value) if isinstance(value, str) else value
        return inflate(value)  # PostgreSQL stores text, whatever it is handed

    def process_result_value(self, value: Any, dialect: Dialect) -> str | None:
        return inflate(value)


documents = Table(
    "documents",
    metadata,
    # Resource name `documents/{host}/{path}`; the API's identifier.
    Column("name", NAME, primary_key=True),
    Column("uri", Text),
    Column("title", Text),
    Column("description", Text),
    Column("data_source", String(255)),
    Column("update_time", String(40)),
    Column("content_length_bytes", Integer),
    # NULL when only metadata (BASIC view) has been seen.
    Column("content", Markdown),
    # Fields upstream sent that this version does not model, as canonical JSON.
    Column("extra_json", Text),
    Column("content_sha256", String(64)),
    # Unix seconds when this copy was fetched or imported; freshness is judged from it.
    Column("fetched_at", Float, nullable=False),
    # Where the copy came from: "rest https://...", "mcp https://...", "import FILE".
    Column("upstream", Text, nullable=False),
    # Newest updateTime seen in metadata since the copy was fetched (marks it stale).
    Column("seen_update_time", String(40)),
)
