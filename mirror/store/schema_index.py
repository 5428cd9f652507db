"""The local search index: `search_docs` (Core metadata) and its SQLite FTS5 table `doc_fts`.

One index row per document, not per chunk, and no copy of the text: `doc_fts` is an
external-content FTS5 table whose content is the view `search_content`, which reads title,
description and Markdown from `documents` and only the derived text (headings, identifier
parts, CJK bigrams) from `search_docs`. Chunks are cut again from the stored Markdown when a
page is shown (mirror.search.chunking is deterministic), so they are never stored either.

FTS5 removes an external-content row only when given the values it indexed, so the triggers
on `documents` hand it the old values before a row is deleted or its text changes; the Python
writer (index.py) then indexes the new text. `search_docs` ids are AUTOINCREMENT: an id is
never reused, so an FTS row left over by anything that bypassed the triggers can never attach
to another document (searches join through search_docs, and `index rebuild` clears it).

The Markdown is stored compressed on SQLite (compression.py): the view and the triggers read
it through `dk_inflate`, and the change trigger compares texts, not stored bytes, which another
zlib build could pack differently for the same text (index.changed compares hashes: the two
must agree, or an entry would be forgotten and never written again).

`search_docs` is plain SQL and exists on every database, so migrations and metadata agree
everywhere; the view, FTS tables and triggers are SQLite-only. Migrations 0007 and 0012 spell
out the same statements; tests/test_migrations.py compares them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Column, Connection, ForeignKey, Integer, Table, Text, event

from . import schema_pg_index
from .schema import NAME, metadata
from .sql import FTS_TABLE, FTS_VOCAB, HEAD_TABLE

search_docs = Table(
    "search_docs",
    metadata,
    # The rowid of the document's row in doc_fts.
    Column("id", Integer, primary_key=True),
    Column(
        "name",
        NAME,
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_search_docs_document"),
        nullable=False,
        unique=True,
    ),
    # Heading lines of the Markdown (weighted above the body), and the side column's text
    # (mirror.search.lexical.side_text).
    Column("headings", Text, nullable=False),
    Column("side", Text, nullable=False),
    sqlite_autoincrement=True,
)

_COLUMNS = "title, description, headings, body, side"
CREATE_VIEW = (
    "CREATE VIEW search_content AS SELECT s.id AS id, d.title AS title, "
    "d.description AS description, s.headings AS headings, dk_inflate(d.content) AS body, "
    "s.side AS side "
    "FROM search_docs AS s JOIN documents AS d ON d.name = s.name"
)
CREATE_FTS = (
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5({_COLUMNS}, content = 'search_content', "
    "content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')"
)
# The same documents' title, description and heading lines alone, over the same view: a
# common word's doclist here is a small part of its doclist in doc_fts (fts.py's first tier).
_HEAD = "title, description, headings"
CREATE_HEAD = (
    f"CREATE VIRTUAL TABLE {HEAD_TABLE} USING fts5({_HEAD}, content = 'search_content', "
    "content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')"
)
# Terms and their document counts: the vocabulary typo correction looks in.
CREATE_VOCAB = f"CREATE VIRTUAL TABLE {FTS_VOCAB} USING fts5vocab({FTS_TABLE}, 'row')"
_FORGET = (
    f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}, rowid, {_COLUMNS}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings, dk_inflate(old.content), "
    "s.side "
    "FROM search_docs AS s WHERE s.name = old.name; "
    f"INSERT INTO {HEAD_TABLE} ({HEAD_TABLE}, rowid, {_HEAD}) "
    "SELECT 'delete', s.id, old.title, old.description, s.headings "
    "FROM search_docs AS s WHERE s.name = old.name; "
    "DELETE FROM search_docs WHERE name = old.name;"
)
# The text changed: its hash did, or (a write that bypassed the store and left the hash, or
# the same text packed differently by another zlib build) the stored values differ and so do
# the texts they hold. SQLite stops at the first true term: a re-put of unchanged pages
# (equal hashes, equal bytes) decompresses nothing.
TEXT_CHANGED = (
    "old.content_sha256 IS NOT new.content_sha256 OR (old.content IS NOT new.content "
    "AND dk_inflate(old.content) IS NOT dk_inflate(new.content))"
)
CREATE_TRIGGERS = (
    f"CREATE TRIGGER doc_fts_forget BEFORE DELETE ON documents BEGIN {_FORGET} END",
    "CREATE TRIGGER doc_fts_change BEFORE UPDATE OF title, description, content ON documents "
    "WHEN old.title IS NOT new.title OR old.description IS NOT new.description "
    f"OR {TEXT_CHANGED} BEGIN {_FORGET} END",
)
SQLITE_OBJECTS = (CREATE_VIEW, CREATE_FTS, CREATE_HEAD, CREATE_VOCAB, *CREATE_TRIGGERS)


@event.listens_for(search_docs, "after_create")
def _create_fts(_target: Table, connection: Connection, **_kw: Any) -> None:
    # metadata.create_all builds what the migrations build (FTS5 exists only on SQLite,
    # tsvector only on PostgreSQL: schema_pg_index.py).
    if connection.dialect.name == "sqlite":
        for statement in SQLITE_OBJECTS:
            connection.exec_driver_sql(statement)
    elif connection.dialect.name == "postgresql":
        for statement in schema_pg_index.CREATE:
            connection.exec_driver_sql(statement)


@event.listens_for(search_docs, "before_drop")
def _drop_fts(_target: Table, connection: Connection, **_kw: Any) -> None:
    if connection.dialect.name == "postgresql":
        for statement in schema_pg_index.DROP:
            connection.exec_driver_sql(statement)
    if connection.dialect.name == "sqlite":
        for trigger in ("doc_fts_forget", "doc_fts_change"):
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {trigger}")
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {FTS_VOCAB}")
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {FTS_TABLE}")
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {HEAD_TABLE}")
        connection.exec_driver_sql("DROP VIEW IF EXISTS search_content")
