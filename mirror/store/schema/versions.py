"""Document history: every version a document had, its content stored once per sha256, and
the documents upstream no longer has.

The current content stays in `documents` (read on every lookup, indexed for search); a
version's content moves to `version_contents` only when a newer one supersedes it, so a store
of unchanged documents costs one small row per document here and no second copy of any page.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Index, Integer, String, Table, Text

from .tables import NAME, Markdown, metadata

# Content of superseded versions, content-addressed: the same bytes are stored once, whichever
# documents and versions share them.
version_contents = Table(
    "version_contents",
    metadata,
    Column("sha256", String(64), primary_key=True),
    Column("content", Markdown, nullable=False),
)

# One row per version of a document, numbered 1, 2, ... per name. A new row is written only
# when a put changes the content's sha256; a version's content is in `version_contents`, or,
# for the current one, in `documents`. No foreign key to `documents`: history outlives a
# document a snapshot tombstone removed, so a lock pinning it can still restore it.
document_versions = Table(
    "document_versions",
    metadata,
    Column("name", NAME, primary_key=True),
    Column("version", Integer, primary_key=True),
    Column("sha256", String(64), nullable=False),
    # The metadata the document had with this content (its latest, once superseded).
    Column("uri", Text),
    Column("title", Text),
    Column("description", Text),
    Column("data_source", String(255)),
    Column("update_time", String(40)),
    Column("content_length_bytes", Integer),
    Column("extra_json", Text),
    # Unix seconds when this content was first stored, and where it came from.
    Column("fetched_at", Float, nullable=False),
    Column("upstream", Text, nullable=False),
    # Finds whether any version still needs a content row (pruning), and lock restores.
    Index("ix_document_versions_sha256", "sha256"),
)

# Documents a refresh found gone upstream: kept locally, flagged until upstream has them again.
gone_documents = Table(
    "gone_documents",
    metadata,
    Column(
        "name",
        NAME,
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_gone_document"),
        primary_key=True,
    ),
    # When a refresh first found it missing, and when one last asked.
    Column("gone_since", Float, nullable=False),
    Column("checked_at", Float, nullable=False),
)
