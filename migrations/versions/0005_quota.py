"""quota buckets: pacing state shared by every process on the store

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create quota_buckets."""
    op.create_table(
        "quota_buckets",
        sa.Column("upstream", sa.String(400), primary_key=True),
        sa.Column("bucket", sa.String(40), primary_key=True),
        sa.Column("tat", sa.Float(), nullable=False),
        sa.Column("rate_factor", sa.Float(), nullable=False),
        sa.Column("slowed_at", sa.Float(), nullable=False),
    )


def downgrade() -> None:
    """Drop quota_buckets."""
    op.drop_table("quota_buckets")
