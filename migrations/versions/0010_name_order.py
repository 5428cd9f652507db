"""name order: document names compare in code-point order on PostgreSQL, whatever its locale

Revision ID: 0010
Revises: 0009

Snapshots hash documents in name order as Python sorts them (code points), listings page
by name and prefixes are ranges (`name >= p AND name < p || U+10FFFF`). SQLite compares text
by code point already; PostgreSQL uses the database's collation (en_US and the like sort
case- and punctuation-blind), which would reorder names and break prefix ranges. The "C"
collation on every name column gives PostgreSQL SQLite's order. Nothing changes on SQLite.
"""

from __future__ import annotations

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

# Every table with a document-name column, parents before the tables that reference them.
NAMED = (
    "documents",
    "document_versions",
    "gone_documents",
    "search_docs",
    "doc_vectors",
    "crawl_frontier",
    "missing_documents",
)


def _collate(collation: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in NAMED:
        op.execute(f'ALTER TABLE {table} ALTER COLUMN name TYPE varchar(500) COLLATE "{collation}"')


def upgrade() -> None:
    """Code-point order for names on PostgreSQL."""
    _collate("C")


def downgrade() -> None:
    """Back to the database's default collation."""
    _collate("default")
