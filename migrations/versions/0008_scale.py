"""scale: kept document counts per data source (triggers), and an index on fetched_at

Revision ID: 0008
Revises: 0007

`status` read every document to count them, sum their bytes and find the newest fetch (seconds
at 1M documents). The counts now live in `document_counts`, kept by triggers on SQLite in the
same transaction as every write; this revision computes them once for the documents already
stored. On other databases the table is created (the schema matches the code's metadata) but
stays empty, and the stats keep counting `documents`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def _add(row: str, sign: str) -> str:
    return (
        "INSERT INTO document_counts (data_source, documents, with_content, content_bytes) "
        f"VALUES (coalesce({row}.data_source, ''), {sign}1, "
        f"{sign}({row}.content IS NOT NULL), {sign}coalesce({row}.content_length_bytes, 0)) "
        "ON CONFLICT (data_source) DO UPDATE SET "
        "documents = documents + excluded.documents, "
        "with_content = with_content + excluded.with_content, "
        "content_bytes = content_bytes + excluded.content_bytes;"
    )


# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema/counts.py holds the same text (tests compare the results).
CREATE_TRIGGERS = (
    f"CREATE TRIGGER document_counts_insert AFTER INSERT ON documents BEGIN {_add('new', '')} END",
    f"CREATE TRIGGER document_counts_delete AFTER DELETE ON documents BEGIN {_add('old', '-')} END",
    "CREATE TRIGGER document_counts_update AFTER UPDATE OF data_source, content, "
    f"content_length_bytes ON documents BEGIN {_add('old', '-')} {_add('new', '')} END",
)
TRIGGERS = ("document_counts_insert", "document_counts_delete", "document_counts_update")


def upgrade() -> None:
    """Create document_counts (+ its triggers on SQLite, counting what is stored) and the index."""
    op.create_table(
        "document_counts",
        sa.Column("data_source", sa.String(255), primary_key=True),
        sa.Column("documents", sa.Integer(), nullable=False),
        sa.Column("with_content", sa.Integer(), nullable=False),
        sa.Column("content_bytes", sa.Integer(), nullable=False),
    )
    op.create_index("ix_documents_fetched_at", "documents", ["fetched_at"])
    if op.get_bind().dialect.name != "sqlite":
        return
    # Counted in the migration's transaction, with the triggers created in it: no write can
    # fall between the count and the first trigger.
    op.execute(
        "INSERT INTO document_counts (data_source, documents, with_content, content_bytes) "
        "SELECT coalesce(data_source, ''), count(*), count(content), "
        "coalesce(sum(content_length_bytes), 0) FROM documents GROUP BY coalesce(data_source, '')"
    )
    for statement in CREATE_TRIGGERS:
        op.execute(statement)


def downgrade() -> None:
    """Drop the triggers, the counts and the index."""
    if op.get_bind().dialect.name == "sqlite":
        for name in TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_index("ix_documents_fetched_at", table_name="documents")
    op.drop_table("document_counts")
