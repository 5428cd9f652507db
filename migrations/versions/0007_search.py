"""search: one external-content FTS5 row per document instead of a copy of every chunk

Revision ID: 0007
Revises: 0006

Replaces `chunks` + `chunks_fts` (each chunk's text copied, title and description repeated on
every chunk) with `search_docs` (heading lines and the side column only) and `doc_fts`, an
external-content FTS5 table over the view `search_content`, which reads the text from
`documents`, and `head_fts`, the same over title, description and headings alone (the
first tier for common words). Tokenizer: porter (English stemming) over unicode61. The index is rebuilt from
the stored documents. On other databases only `search_docs` is created (no FTS5).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from mirror.search.chunking import chunk_markdown, headings
from mirror.search.lexical import side_text

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema/index.py holds the same text (tests compare the results).
_COLUMNS = "title, description, headings, body, side"
CREATE_VIEW = (
    "CREATE VIEW search_content AS SELECT s.id AS id, d.title AS title, "
    "d.description AS description, s.headings AS headings, d.content AS body, s.side AS side "
    "FROM search_docs AS s JOIN documents AS d ON d.name = s.name"
)
CREATE_FTS = (
    f"CREATE VIRTUAL TABLE doc_fts USING fts5({_COLUMNS}, content = 'search_content', "
    "content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')"
)
_HEAD = "title, description, headings"
CREATE_HEAD = (
    f"CREATE VIRTUAL TABLE head_fts USING fts5({_HEAD}, content = 'search_content', "
    "content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')"
)
CREATE_VOCAB = "CREATE VIRTUAL TABLE doc_fts_vocab USING fts5vocab(doc_fts, 'row')"
_FORGET = (
    f"INSERT INTO doc_fts (doc_fts, rowid, {_COLUMNS}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings, old.content, s.side "
    "FROM search_docs AS s WHERE s.name = old.name; "
    f"INSERT INTO head_fts (head_fts, rowid, {_HEAD}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings "
    "FROM search_docs AS s WHERE s.name = old.name; "
    "DELETE FROM search_docs WHERE name = old.name;"
)
CREATE_TRIGGERS = (
    f"CREATE TRIGGER doc_fts_forget BEFORE DELETE ON documents BEGIN {_FORGET} END",
    "CREATE TRIGGER doc_fts_change BEFORE UPDATE OF title, description, content ON documents "
    "WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    f"OR old.content IS NOT new.content BEGIN {_FORGET} END",
)
_BATCH = 200


def upgrade() -> None:
    """Drop the chunk index; create search_docs (+ the FTS5 objects on SQLite) and fill it."""
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS chunks_fts_delete")
        op.execute("DROP TABLE IF EXISTS chunks_fts")
    op.drop_table("chunks")
    op.create_table(
        "search_docs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "name",
            sa.String(500),
            sa.ForeignKey("documents.name", ondelete="CASCADE", name="fk_search_docs_document"),
            nullable=False,
            unique=True,
        ),
        sa.Column("headings", sa.Text(), nullable=False),
        sa.Column("side", sa.Text(), nullable=False),
        sqlite_autoincrement=True,
    )
    if bind.dialect.name != "sqlite":
        return
    for statement in (CREATE_VIEW, CREATE_FTS, CREATE_HEAD, CREATE_VOCAB, *CREATE_TRIGGERS):
        op.execute(statement)
    _backfill(bind)


def _backfill(bind: sa.Connection) -> None:
    """Index every stored document that has content, a batch of names at a time."""
    after = ""
    while True:
        rows = bind.exec_driver_sql(
            "SELECT name, title, content FROM documents "
            "WHERE name > ? AND content IS NOT NULL ORDER BY name LIMIT ?",
            (after, _BATCH),
        ).all()
        if not rows:
            break
        bind.exec_driver_sql(
            "INSERT INTO search_docs (name, headings, side) VALUES (?, ?, ?)",
            [(name, headings(content), side_text(title, content)) for name, title, content in rows],
        )
        after = rows[-1][0]
    op.execute("INSERT INTO doc_fts (doc_fts) VALUES ('rebuild')")
    op.execute("INSERT INTO head_fts (head_fts) VALUES ('rebuild')")


def downgrade() -> None:
    """Back to revision 0003's chunk index, rebuilt from the stored documents."""
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for trigger in ("doc_fts_forget", "doc_fts_change"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        op.execute("DROP TABLE IF EXISTS doc_fts_vocab")
        op.execute("DROP TABLE IF EXISTS doc_fts")
        op.execute("DROP TABLE IF EXISTS head_fts")
        op.execute("DROP VIEW IF EXISTS search_content")
    op.drop_table("search_docs")
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
    if bind.dialect.name != "sqlite":
        return
    op.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5("
        'title, description, heading, body, tokenize = "unicode61 remove_diacritics 2")'
    )
    op.execute(
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
        "DELETE FROM chunks_fts WHERE rowid = old.id; END"
    )
    rows = bind.exec_driver_sql(
        "SELECT name, title, description, content FROM documents WHERE content IS NOT NULL"
    ).all()
    next_id = 1
    for name, title, description, content in rows:
        for ordinal, chunk in enumerate(chunk_markdown(content)):
            bind.exec_driver_sql(
                "INSERT INTO chunks (id, name, chunk_id, ordinal, heading) VALUES (?, ?, ?, ?, ?)",
                (next_id, name, chunk.id, ordinal, chunk.heading),
            )
            bind.exec_driver_sql(
                "INSERT INTO chunks_fts (rowid, title, description, heading, body) "
                "VALUES (?, ?, ?, ?, ?)",
                (next_id, title or "", description or "", chunk.heading, chunk.text),
            )
            next_id += 1
