"""documents: one row per Document, keyed by resource name

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the documents table."""
    op.create_table(
        "documents",
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("uri", sa.Text()),
        sa.Column("title", sa.Text()),
        sa.Column("description", sa.Text()),
        sa.Column("data_source", sa.String(255)),
        sa.Column("update_time", sa.String(40)),
        sa.Column("content_length_bytes", sa.Integer()),
        sa.Column("content", sa.Text()),
        sa.Column("extra_json", sa.Text()),
        sa.Column("content_sha256", sa.String(64)),
        sa.Column("fetched_at", sa.Float(), nullable=False),
        sa.Column("upstream", sa.Text(), nullable=False),
        sa.Column("seen_update_time", sa.String(40)),
    )


def downgrade() -> None:
    """Drop the documents table."""
    op.drop_table("documents")
