"""search index: document chunks and their SQLite FTS5 table, backfilled from stored content

Revision ID: 0002
Revises: 0001

Local search needs SQLite (FTS5). On other databases only the `chunks` table is created, so
the schema still matches the code's metadata; it stays empty and local search is unavailable.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mirror.search.chunking import chunk_markdown

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema/index.py holds the same text (tests compare the results).
CREATE_FTS = (
    "CREATE VIRTUAL TABLE chunks_fts USING fts5("
    'title, description, heading, body, tokenize = "unicode61 remove_diacritics 2")'
)
CREATE_TRIGGER = (
    "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
    "DELETE FROM chunks_fts WHERE rowid = old.id; END"
)
_BATCH = 200


def upgrade() -> None:
    """Create chunks (+ chunks_fts and its trigger on SQLite) and index stored documents."""
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "name",
            sa.String(500),
            sa.ForeignKey("documents.name", ondelete="CASCADE", name="fk_chunks_document"),
            nullable=False,
        ),
        sa.Column("chunk_id", sa.String(32), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("heading", sa.Text()),
        sa.UniqueConstraint("name", "ordinal", name="uq_chunks_name_ordinal"),
    )
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    op.execute(CREATE_FTS)
    op.execute(CREATE_TRIGGER)
    _backfill(bind)


def _backfill(bind: sa.Connection) -> None:
    """Index every stored document that has content, a batch of names at a time."""
    next_id, after = 1, ""
    while True:
        rows = bind.exec_driver_sql(
            "SELECT name, title, description, content FROM documents "
            "WHERE name > ? AND content IS NOT NULL ORDER BY name LIMIT ?",
            (after, _BATCH),
        ).all()
        if not rows:
            return
        chunk_rows, fts_rows = [], []
        for name, title, description, content in rows:
            for ordinal, chunk in enumerate(chunk_markdown(content)):
                chunk_rows.append((next_id, name, chunk.id, ordinal, chunk.heading))
                fts_rows.append(
                    (next_id, title or "", description or "", chunk.heading, chunk.text)
                )
                next_id += 1
        if chunk_rows:
            bind.exec_driver_sql(
                "INSERT INTO chunks (id, name, chunk_id, ordinal, heading) VALUES (?, ?, ?, ?, ?)",
                chunk_rows,
            )
            bind.exec_driver_sql(
                "INSERT INTO chunks_fts (rowid, title, description, heading, body) "
                "VALUES (?, ?, ?, ?, ?)",
                fts_rows,
            )
        after = rows[-1][0]


def downgrade() -> None:
    """Drop the index tables."""
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS chunks_fts_delete")
        op.execute("DROP TABLE IF EXISTS chunks_fts")
    op.drop_table("chunks")
