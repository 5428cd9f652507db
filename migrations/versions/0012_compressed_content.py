"""compressed Markdown on SQLite: documents.content and version_contents.content as zlib BLOBs

Revision ID: 0012
Revises: 0011

The Markdown was the largest part of an SQLite store (1.9x the Markdown bytes in all, search
index included). From this revision the store writes it zlib-compressed (mirror/store/
compression.py); this rewrites the rows already there the same way. The FTS5 index is left as
it is: the text it indexed does not change, only how it is stored. Its content view and the
triggers that hand FTS5 the old text now read it through `dk_inflate`, which every connection
of the project registers, and the change trigger compares texts (their sha256 first) instead
of stored bytes. On PostgreSQL it does nothing: TOAST compresses large text already.

The file does not shrink by itself (SQLite reuses the freed pages for later writes); `VACUUM`
in the sqlite3 shell, with no dk-mirror process using the store, gives them back.
"""

from __future__ import annotations

import sqlite3
import zlib

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema/index.py holds the same text (tests compare the results).
_COLUMNS = "title, description, headings, body, side"
_HEAD = "title, description, headings"


def _view(body: str) -> str:
    return (
        "CREATE VIEW search_content AS SELECT s.id AS id, d.title AS title, "
        f"d.description AS description, s.headings AS headings, {body} AS body, "
        "s.side AS side "
        "FROM search_docs AS s JOIN documents AS d ON d.name = s.name"
    )


def _triggers(body: str, changed: str) -> tuple[str, str]:
    forget = (
        f"INSERT INTO doc_fts (doc_fts, rowid, {_COLUMNS}) "
        f"SELECT 'delete', s.id, old.title, old.description, s.headings, {body}, "
        "s.side "
        "FROM search_docs AS s WHERE s.name = old.name; "
        f"INSERT INTO head_fts (head_fts, rowid, {_HEAD}) "
        "SELECT 'delete', s.id, old.title, old.description, s.headings "
        "FROM search_docs AS s WHERE s.name = old.name; "
        "DELETE FROM search_docs WHERE name = old.name;"
    )
    return (
        f"CREATE TRIGGER doc_fts_forget BEFORE DELETE ON documents BEGIN {forget} END",
        "CREATE TRIGGER doc_fts_change BEFORE UPDATE OF title, description, content ON "
        "documents WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
        f"OR {changed} BEGIN {forget} END",
    )


# This revision's objects, and revision 0007's (restored by the downgrade).
CREATE = (
    _view("dk_inflate(d.content)"),
    *_triggers(
        "dk_inflate(old.content)",
        "old.content_sha256 IS NOT new.content_sha256 OR (old.content IS NOT new.content "
        "AND dk_inflate(old.content) IS NOT dk_inflate(new.content))",
    ),
)
CREATE_0007 = (
    # As 0007 spelt it (sqlite_master keeps a statement's text as given).
    "CREATE VIEW search_content AS SELECT s.id AS id, d.title AS title, "
    "d.description AS description, s.headings AS headings, d.content AS body, s.side AS side "
    "FROM search_docs AS s JOIN documents AS d ON d.name = s.name",
    *_triggers("old.content", "old.content IS NOT new.content"),
)
# zlib level 1, as mirror/store/db/compression.py writes.
_LEVEL = 1


def _deflate(value: str | bytes | None) -> bytes | str | None:
    return zlib.compress(value.encode("utf-8"), _LEVEL) if isinstance(value, str) else value


def _inflate(value: str | bytes | None) -> str | bytes | None:
    return zlib.decompress(value).decode("utf-8") if isinstance(value, bytes) else value


def _rewrite(function: str, kind: str) -> None:
    """Rewrite every stored Markdown of type `kind` through the SQL function `function`."""
    for table in ("documents", "version_contents"):
        op.execute(
            f"UPDATE {table} SET content = {function}(content) WHERE typeof(content) = '{kind}'"
        )


def _replace_objects(statements: tuple[str, ...]) -> None:
    for trigger in ("doc_fts_forget", "doc_fts_change"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    op.execute("DROP VIEW IF EXISTS search_content")
    for statement in statements:
        op.execute(statement)


def _register() -> None:
    from mirror.store.db import compression

    raw = op.get_bind().connection.driver_connection
    for name, function in (("dk_0012_deflate", _deflate), ("dk_0012_inflate", _inflate)):
        try:
            raw.create_function(name, 1, function, deterministic=True)
        except sqlite3.OperationalError:
            # Defined on this connection by the upgrade already: SQLite refuses to redefine a
            # function while a virtual table holds prepared statements (0013's downgrade
            # rebuilds FTS5 just before this runs).
            found = "SELECT 1 FROM pragma_function_list WHERE name = ?"
            if raw.execute(found, (name,)).fetchone() is None:
                raise
    # What the new view and triggers call (every connection of the project registers it).
    compression.register(raw)


def upgrade() -> None:
    """Compress the stored Markdown; the view and triggers read it through dk_inflate."""
    if op.get_bind().dialect.name != "sqlite":
        return
    _register()
    # The triggers go first: rewriting the rows must not make FTS5 forget anything.
    _replace_objects(())
    _rewrite("dk_0012_deflate", "text")
    _replace_objects(CREATE)


def downgrade() -> None:
    """Store the Markdown as plain text again, with revision 0007's view and triggers."""
    if op.get_bind().dialect.name != "sqlite":
        return
    _register()
    _replace_objects(())
    _rewrite("dk_0012_inflate", "blob")
    _replace_objects(CREATE_0007)
