"""crawl: crawls, their frontier, and names upstream does not have

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create crawls, crawl_frontier and missing_documents."""
    op.create_table(
        "crawls",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("key", sa.String(64), nullable=False, unique=True),
        sa.Column("spec_json", sa.Text(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("finished_at", sa.Float()),
        sa.Column("searched", sa.Integer(), nullable=False),
        sa.Column("next_seq", sa.Integer(), nullable=False),
    )
    op.create_table(
        "crawl_frontier",
        sa.Column(
            "crawl_id",
            sa.Integer(),
            sa.ForeignKey("crawls.id", ondelete="CASCADE", name="fk_crawl_frontier_crawl"),
            primary_key=True,
        ),
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("found_from", sa.Text(), nullable=False),
    )
    op.create_index(
        "ix_crawl_frontier_walk", "crawl_frontier", ["crawl_id", "state", "depth", "seq"]
    )
    op.create_table(
        "missing_documents",
        sa.Column("name", sa.String(500), primary_key=True),
        sa.Column("first_missing_at", sa.Float(), nullable=False),
        sa.Column("checked_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    """Drop the crawl tables."""
    op.drop_table("missing_documents")
    op.drop_index("ix_crawl_frontier_walk", table_name="crawl_frontier")
    op.drop_table("crawl_frontier")
    op.drop_table("crawls")
