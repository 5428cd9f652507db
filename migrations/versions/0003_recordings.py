"""recordings: upstream search pages and answers for offline replay; local quota counts

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create search_pages, answers and quota_usage."""
    op.create_table(
        "search_pages",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("filter", sa.Text()),
        sa.Column("page_size", sa.Integer(), nullable=False),
        sa.Column("page_token", sa.Text()),
        sa.Column("response_json", sa.Text(), nullable=False),
        sa.Column("upstream", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "answers",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("query", sa.Text(), nullable=False),
        sa.Column("filter", sa.Text()),
        sa.Column("answer_json", sa.Text(), nullable=False),
        sa.Column("references_json", sa.Text(), nullable=False),
        sa.Column("upstream", sa.Text(), nullable=False),
        sa.Column("recorded_at", sa.Float(), nullable=False),
    )
    op.create_table(
        "quota_usage",
        sa.Column("bucket", sa.String(40), primary_key=True),
        sa.Column("period", sa.String(20), primary_key=True),
        sa.Column("used", sa.Integer(), nullable=False),
    )


def downgrade() -> None:
    """Drop the recording tables."""
    op.drop_table("quota_usage")
    op.drop_table("answers")
    op.drop_table("search_pages")
