"""search on SQLite: a tantivy index beside the store, following a change log, instead of FTS5

Revision ID: 0013
Revises: 0012

FTS5 scored every page a query matched (a common word cost a BM25 call per matching page: 1 s
at p50 at 1M pages) and its writes were two thirds of an import's writer time. The SQLite
index is now a tantivy folder beside the store file (mirror/store/textindex/sqlite/index.py), which reads
the store; this revision drops the FTS5 tables, their view and triggers, and empties
`search_docs` (PostgreSQL's index table, unused on SQLite), then creates `search_changes`: a
log of the pages written with content, changed or deleted, appended by triggers on
`documents`. The tantivy index is built from the documents at the first search or by
`dk-mirror index rebuild`. On PostgreSQL only the (unused) table is created.

The downgrade restores revision 0012's FTS5 objects and fills them from the documents again.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema/index.py holds the same text (tests compare the results).
_TEXT_CHANGED = (
    "old.content_sha256 IS NOT new.content_sha256 OR (old.content IS NOT new.content "
    "AND dk_inflate(old.content) IS NOT dk_inflate(new.content))"
)
_LOG = "INSERT INTO search_changes (name) VALUES"
CREATE_TRIGGERS = (
    "CREATE TRIGGER search_log_insert AFTER INSERT ON documents "
    f"WHEN new.content IS NOT NULL BEGIN {_LOG} (new.name); END",
    "CREATE TRIGGER search_log_change AFTER UPDATE OF title, description, content ON documents "
    "WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    f"OR {_TEXT_CHANGED} BEGIN {_LOG} (new.name); END",
    "CREATE TRIGGER search_log_delete AFTER DELETE ON documents "
    f"WHEN old.content IS NOT NULL BEGIN {_LOG} (old.name); END",
)

# Revision 0012's FTS5 objects, restored by the downgrade.
_COLUMNS = "title, description, headings, body, side"
_HEAD = "title, description, headings"
_TOKENIZE = "tokenize = 'porter unicode61 remove_diacritics 2'"
_FORGET = (
    f"INSERT INTO doc_fts (doc_fts, rowid, {_COLUMNS}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings, dk_inflate(old.content), "
    "s.side "
    "FROM search_docs AS s WHERE s.name = old.name; "
    f"INSERT INTO head_fts (head_fts, rowid, {_HEAD}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings "
    "FROM search_docs AS s WHERE s.name = old.name; "
    "DELETE FROM search_docs WHERE name = old.name;"
)
CREATE_0012 = (
    "CREATE VIEW search_content AS SELECT s.id AS id, d.title AS title, "
    "d.description AS description, s.headings AS headings, dk_inflate(d.content) AS body, "
    "s.side AS side "
    "FROM search_docs AS s JOIN documents AS d ON d.name = s.name",
    f"CREATE VIRTUAL TABLE doc_fts USING fts5({_COLUMNS}, content = 'search_content', "
    f"content_rowid = 'id', {_TOKENIZE})",
    f"CREATE VIRTUAL TABLE head_fts USING fts5({_HEAD}, content = 'search_content', "
    f"content_rowid = 'id', {_TOKENIZE})",
    "CREATE VIRTUAL TABLE doc_fts_vocab USING fts5vocab(doc_fts, 'row')",
    f"CREATE TRIGGER doc_fts_forget BEFORE DELETE ON documents BEGIN {_FORGET} END",
    "CREATE TRIGGER doc_fts_change BEFORE UPDATE OF title, description, content ON documents "
    "WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    f"OR {_TEXT_CHANGED} BEGIN {_FORGET} END",
)
_BATCH = 200


def upgrade() -> None:
    """Drop FTS5; create the change log (and its triggers on SQLite)."""
    sqlite = op.get_bind().dialect.name == "sqlite"
    if sqlite:
        for trigger in ("doc_fts_forget", "doc_fts_change"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        for table in ("doc_fts_vocab", "doc_fts", "head_fts"):
            op.execute(f"DROP TABLE IF EXISTS {table}")
        op.execute("DROP VIEW IF EXISTS search_content")
        op.execute("DELETE FROM search_docs")
    op.create_table(
        "search_changes",
        sa.Column("id", sa.Integer(), primary_key=True),
        # Names compare by code point whatever the server's locale (as in migration 0010).
        sa.Column(
            "name",
            sa.String(500).with_variant(sa.String(500, collation="C"), "postgresql"),
            nullable=False,
        ),
        sqlite_autoincrement=True,
    )
    if sqlite:
        for statement in CREATE_TRIGGERS:
            op.execute(statement)


def downgrade() -> None:
    """Back to revision 0012's FTS5 index, rebuilt from the stored documents."""
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for trigger in ("search_log_insert", "search_log_change", "search_log_delete"):
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.drop_table("search_changes")
    if bind.dialect.name != "sqlite":
        return
    from mirror.search.chunking import headings
    from mirror.search.lexical import side_text

    # dk_inflate: every connection of the project registers it (mirror/store/db/compression.py).
    for statement in CREATE_0012:
        op.execute(statement)
    # On the DBAPI connection, its cursor closed at the end: an unfinished statement would
    # stop the next revision's downgrade from registering its SQL functions.
    cursor = bind.connection.driver_connection.cursor()
    try:
        after = ""
        while True:
            rows = cursor.execute(
                "SELECT name, title, dk_inflate(content) FROM documents "
                "WHERE name > ? AND content IS NOT NULL ORDER BY name LIMIT ?",
                (after, _BATCH),
            ).fetchall()
            if not rows:
                break
            cursor.executemany(
                "INSERT INTO search_docs (name, headings, side) VALUES (?, ?, ?)",
                [(name, headings(text), side_text(title, text)) for name, title, text in rows],
            )
            after = rows[-1][0]
        cursor.execute("INSERT INTO doc_fts (doc_fts) VALUES ('rebuild')")
        cursor.execute("INSERT INTO head_fts (head_fts) VALUES ('rebuild')")
    finally:
        cursor.close()
