"""semantic index: one int8 vector per document and the model the index is built for

Revision ID: 0009
Revises: 0008

Empty at first: vectors are computed by `dk-mirror index` (with the `semantic` extra), never by
a migration, so upgrading needs no model.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create doc_vectors and semantic_state."""
    op.create_table(
        "doc_vectors",
        sa.Column(
            "name",
            sa.String(500),
            sa.ForeignKey("documents.name", ondelete="CASCADE", name="fk_doc_vectors_document"),
            primary_key=True,
        ),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("content_sha256", sa.String(64)),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("scale", sa.Float(), nullable=False),
    )
    op.create_table(
        "semantic_state",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.Float()),
    )


def downgrade() -> None:
    """Drop the semantic index tables."""
    op.drop_table("semantic_state")
    op.drop_table("doc_vectors")
