"""The local search index's PostgreSQL objects: two tsvector columns on `search_docs`, their
GIN indexes, and the trigger that forgets a document's entry when its text changes.

`search_docs` (schema_index.py) exists on every database. On SQLite, FTS5 tables read the
text through a view; on PostgreSQL each row carries its document's tsvectors (`english`
configuration: Snowball stemming and stopwords): `words` over title (weight A), heading lines
(B), description (C), body and side column (D), and `head_words` over title, headings and
description alone, the first tier for common words (as FTS5's head_fts). The writer computes
them from the text it is writing (mirror/store/textindex/postgres/index.py), inside the same transaction.

The trigger mirrors SQLite's doc_fts_change: a write that changes a document's text without
going through the writer (a hand-made UPDATE) drops its entry instead of leaving stale words,
and `dk-mirror index check` then counts the document as not indexed. A deleted document's
entry goes by the foreign key's ON DELETE CASCADE.

Not in the Core metadata (SQLite has no tsvector); created by `metadata.create_all` through
the event below and by migration 0011, which spells out the same statements.
"""

from __future__ import annotations

WORDS = "words"
HEAD_WORDS = "head_words"
FORGET_FUNCTION = "search_docs_forget"
FORGET_TRIGGER = "search_docs_forget_changed"

CREATE = (
    f"ALTER TABLE search_docs ADD COLUMN {WORDS} tsvector, ADD COLUMN {HEAD_WORDS} tsvector",
    f"CREATE INDEX ix_search_docs_{WORDS} ON search_docs USING gin ({WORDS})",
    f"CREATE INDEX ix_search_docs_{HEAD_WORDS} ON search_docs USING gin ({HEAD_WORDS})",
    f"CREATE FUNCTION {FORGET_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN DELETE FROM search_docs WHERE name = OLD.name; RETURN NEW; END $$",
    f"CREATE TRIGGER {FORGET_TRIGGER} BEFORE UPDATE OF title, description, content "
    "ON documents FOR EACH ROW WHEN (OLD.title IS DISTINCT FROM NEW.title "
    "OR OLD.description IS DISTINCT FROM NEW.description "
    f"OR OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION {FORGET_FUNCTION}()",
)
DROP = (
    f"DROP TRIGGER IF EXISTS {FORGET_TRIGGER} ON documents",
    f"DROP FUNCTION IF EXISTS {FORGET_FUNCTION}()",
    f"DROP INDEX IF EXISTS ix_search_docs_{HEAD_WORDS}",
    f"DROP INDEX IF EXISTS ix_search_docs_{WORDS}",
    f"ALTER TABLE search_docs DROP COLUMN IF EXISTS {HEAD_WORDS}, DROP COLUMN IF EXISTS {WORDS}",
)
