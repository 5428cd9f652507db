"""symbols: the typed symbol index of the reference pages (mirror/symbols/)

Revision ID: 0015
Revises: 0014

One row per API name a stored page defines or names, owned by that page (deleted with it),
filled here from the documents already stored; every later write keeps a page's rows in step
with its content in the same transaction.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _name() -> sa.types.TypeEngine[str]:
    # Names compare by code point whatever the server's locale (as in migration 0010).
    return sa.String(500).with_variant(sa.String(500, collation="C"), "postgresql")


def upgrade() -> None:
    """Create the table and its indexes, then fill it from the stored pages."""
    op.create_table(
        "symbols",
        sa.Column("source", _name(), primary_key=True),
        sa.Column("name", _name(), primary_key=True),
        sa.Column("type", sa.String(20), nullable=False),
        sa.Column("document", _name(), nullable=False),
        sa.Column("anchor", sa.String(500)),
        sa.Column("parent", _name()),
        sa.Column("key", _name(), nullable=False),
        sa.Column("leaf", _name(), nullable=False),
        sa.ForeignKeyConstraint(
            ["source"], ["documents.name"], ondelete="CASCADE", name="fk_symbols_source"
        ),
    )
    op.create_index("ix_symbols_key", "symbols", ["key"])
    op.create_index("ix_symbols_leaf", "symbols", ["leaf", "key"])
    # The extraction is code, not data: the backfill runs the rules this checkout has (as
    # every write after it does), so a store migrated here matches one built here.
    from mirror.store.tables.symbols import rebuild

    rebuild(op.get_bind())


def downgrade() -> None:
    """Drop the index (it is derived from the documents, nothing is lost)."""
    op.drop_table("symbols")
