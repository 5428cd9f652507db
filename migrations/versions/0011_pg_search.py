"""search on PostgreSQL: tsvector columns on search_docs, GIN indexes, a forget trigger

Revision ID: 0011
Revises: 0010

Until now a PostgreSQL store had `search_docs` but no index behind it (FTS5 is SQLite's), so
local search found nothing there. On PostgreSQL this adds the `words` and `head_words`
tsvector columns (english configuration), their GIN indexes and the trigger that drops an
entry when its document's text changes, then indexes every stored document. On SQLite it
does nothing: FTS5 (revision 0007) is that backend's index.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"  # 0009 on this branch until pg's 0010 was merged
branch_labels = None
depends_on = None

# Spelt out rather than imported, so this revision keeps creating what it created when later
# code changes; mirror/store/schema_pg_index.py holds the same text (tests compare the results).
CREATE = (
    "ALTER TABLE search_docs ADD COLUMN words tsvector, ADD COLUMN head_words tsvector",
    "CREATE INDEX ix_search_docs_words ON search_docs USING gin (words)",
    "CREATE INDEX ix_search_docs_head_words ON search_docs USING gin (head_words)",
    "CREATE FUNCTION search_docs_forget() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM search_docs WHERE name = OLD.name; RETURN NEW; END $$",
    "CREATE TRIGGER search_docs_forget_changed BEFORE UPDATE OF title, description, content "
    "ON documents FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title "
    "OR OLD.description IS DISTINCT FROM NEW.description "
    "OR OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION search_docs_forget()",
)
DROP = (
    "DROP TRIGGER IF EXISTS search_docs_forget_changed ON documents",
    "DROP FUNCTION IF EXISTS search_docs_forget()",
    "DROP INDEX IF EXISTS ix_search_docs_head_words",
    "DROP INDEX IF EXISTS ix_search_docs_words",
    "ALTER TABLE search_docs DROP COLUMN IF EXISTS head_words, DROP COLUMN IF EXISTS words",
)


def upgrade() -> None:
    """Create the PostgreSQL index objects and index the stored documents (PostgreSQL only)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for statement in CREATE:
        op.execute(statement)
    # The index is derived data: built by the code that keeps it (as `dk-mirror index rebuild`).
    from mirror.store.textindex.postgres import index as pg_index

    pg_index.rebuild(bind)


def downgrade() -> None:
    """Drop them again (PostgreSQL only); search_docs is left empty, as before."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for statement in DROP:
        op.execute(statement)
    op.execute("DELETE FROM search_docs")
