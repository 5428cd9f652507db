"""`@name` markers on PostgreSQL: the index entries of pages that write an `@` rebuilt

Revision ID: 0016
Revises: 0015

A query word written `@scope` (a CSS at-rule) now requires its marker word, which the index
writes before each `@name` a page holds (mirror/search/lexical.py). An entry written before
this revision has no markers, so on PostgreSQL this rewrites the entries of the documents
whose title or content has an `@` (the others derive the same entry as before); on SQLite it
does nothing: the tantivy index beside the store is rebuilt at first use by its own version.
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Content is plain text on PostgreSQL (migration 0012 compresses it on SQLite only).
# In parentheses: the clause is ANDed with others.
_WRITES_AT = "(strpos(documents.content, '@') > 0 OR strpos(documents.title, '@') > 0)"


def upgrade() -> None:
    """Rewrite the entries of pages with an `@` (PostgreSQL only)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    # The index is derived data: rewritten by the code that keeps it (as migration 0011).
    from mirror.store.textindex.postgres import index as pg_index

    pg_index.refresh(bind, text(_WRITES_AT))


def downgrade() -> None:
    """Nothing to undo: the code of revision 0015 searches the bare word, marked or not (its
    `index check` reports those entries as differing; `dk-mirror index rebuild` rewrites them)."""
