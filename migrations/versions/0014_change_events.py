"""change_events: the change log, one row per change of a document's content

Revision ID: 0014
Revises: 0013

Every write appends here in its own transaction from now on (mirror/store/tables/changes.py).
An existing store gets its past from the history it kept (document_versions): each kept
version becomes an event observed when that version was fetched, in time order, so `changes`
and the feeds show what the store saw change before the log existed. Those events are not
classified (the classifier is code that changes; a migration keeps doing what it did), and
a version whose predecessor was pruned becomes a `changed` event without its old hash.
Deletions before the log are not derived: when they happened was never kept.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

# Spelt out rather than imported from mirror/store, so this revision keeps doing what it did
# when later code changes.
SEED = (
    "INSERT INTO change_events (name, observed_at, kind, old_sha256, new_sha256, "
    "old_update_time, new_update_time) "
    "SELECT v.name, v.fetched_at, "
    "CASE WHEN v.version = 1 THEN 'added' ELSE 'changed' END, "
    "p.sha256, v.sha256, p.update_time, v.update_time "
    "FROM document_versions AS v LEFT JOIN document_versions AS p "
    "ON p.name = v.name AND p.version = v.version - 1 "
    "ORDER BY v.fetched_at, v.name, v.version"
)


def upgrade() -> None:
    """Create change_events and its indexes; derive events from the kept versions."""
    op.create_table(
        "change_events",
        sa.Column("id", sa.Integer(), primary_key=True),
        # Names compare by code point whatever the server's locale (as in migration 0010).
        sa.Column(
            "name",
            sa.String(500).with_variant(sa.String(500, collation="C"), "postgresql"),
            nullable=False,
        ),
        sa.Column("observed_at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("old_sha256", sa.String(64)),
        sa.Column("new_sha256", sa.String(64)),
        sa.Column("old_update_time", sa.String(40)),
        sa.Column("new_update_time", sa.String(40)),
        sa.Column("classes", sa.Integer()),
        sa.Column("summary", sa.Text()),
        # Ids are never reused (a reader resumes from the last id it saw).
        sqlite_autoincrement=True,
    )
    op.create_index("ix_change_events_name_id", "change_events", ["name", "id"])
    op.create_index("ix_change_events_observed_at", "change_events", ["observed_at"])
    op.execute(SEED)


def downgrade() -> None:
    """Drop the change log (the documents and their history stay)."""
    op.drop_index("ix_change_events_observed_at", table_name="change_events")
    op.drop_index("ix_change_events_name_id", table_name="change_events")
    op.drop_table("change_events")
