"""The tables, as SQLAlchemy Core metadata. Alembic migrations create exactly these."""

from __future__ import annotations

from sqlalchemy import Column, Float, Integer, MetaData, String, Table, Text

from .sql import SCHEMA_REVISION

__all__ = ["NAME", "SCHEMA_REVISION", "documents", "metadata"]

metadata = MetaData()

# A document's resource name. On PostgreSQL in the "C" collation (migration 0010): names
# compare by code point there as in SQLite and Python, whatever the database's locale, so
# listings, prefix ranges and snapshot order are the same on both.
NAME = String(500).with_variant(String(500, collation="C"), "postgresql")

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
    Column("content", Text),
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
