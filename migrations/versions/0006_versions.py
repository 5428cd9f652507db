"""versions: document history (content stored once per sha256) and documents gone upstream

Revision ID: 0006
Revises: 0005

Every stored document with content becomes its own version 1, so an existing store carries
its documents forward with their history starting where the store stands. Only metadata is
copied: the current content stays in `documents` until a newer version supersedes it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Spelt out rather than imported from mirror/store, so this revision keeps doing what it did
# when later code changes. content_sha256 is set whenever content is (store/db/rows.py).
BACKFILL = (
    "INSERT INTO document_versions (name, version, sha256, uri, title, description, "
    "data_source, update_time, content_length_bytes, extra_json, fetched_at, upstream) "
    "SELECT name, 1, content_sha256, uri, title, description, data_source, update_time, "
    "content_length_bytes, extra_json, fetched_at, upstream FROM documents "
    "WHERE content IS NOT NULL AND content_sha256 IS NOT NULL"
)


def upgrade() -> None:
    """Create version_contents, document_versions and gone_documents; backfill version 1."""
    op.create_table(
        "version_contents",
        sa.Column("sha256", sa.String(64), primary_key=True),
        sa.Column("content", sa.Text(), nullable=False),
    )
    op.create_table(
        "document_versions",
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("uri", sa.Text()),
        sa.Column("title", sa.Text()),
        sa.Column("description", sa.Text()),
        sa.Column("data_source", sa.String(255)),
        sa.Column("update_time", sa.String(40)),
        sa.Column("content_length_bytes", sa.Integer()),
        sa.Column("extra_json", sa.Text()),
        sa.Column("fetched_at", sa.Float(), nullable=False),
        sa.Column("upstream", sa.Text(), nullable=False),
    )
    op.create_index("ix_document_versions_sha256", "document_versions", ["sha256"])
    op.create_table(
        "gone_documents",
        sa.Column(
            "name",
            sa.String(500),
            sa.ForeignKey("documents.name", ondelete="CASCADE", name="fk_gone_document"),
            primary_key=True,
        ),
        sa.Column("gone_since", sa.Float(), nullable=False),
        sa.Column("checked_at", sa.Float(), nullable=False),
    )
    op.execute(BACKFILL)


def downgrade() -> None:
    """Drop the history tables (the current documents stay)."""
    op.drop_table("gone_documents")
    op.drop_index("ix_document_versions_sha256", table_name="document_versions")
    op.drop_table("document_versions")
    op.drop_table("version_contents")
