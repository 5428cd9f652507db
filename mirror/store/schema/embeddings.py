"""The semantic index: one dense vector per document, and which model the index is built for.

Plain tables on every database (the vectors are bytes), so migrations and metadata agree
everywhere. A vector row names the model it came from and the content it was computed from;
a row whose model or content no longer matches is stale and is recomputed by `dk-mirror index update`.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, ForeignKey, Integer, LargeBinary, String, Table

from .tables import NAME, metadata

doc_vectors = Table(
    "doc_vectors",
    metadata,
    # ON DELETE CASCADE: deleting a document deletes its vector in the same transaction.
    Column(
        "name",
        NAME,
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_doc_vectors_document"),
        primary_key=True,
    ),
    # The model key (name, package version, token limit, text recipe) that made the vector.
    Column("model", String(200), nullable=False),
    # documents.content_sha256 when the vector was computed: a mismatch marks it stale.
    Column("content_sha256", String(64)),
    # int8 components, little-endian bytes; the float vector is vector * scale.
    Column("vector", LargeBinary, nullable=False),
    Column("scale", Float, nullable=False),
)

# At most one row (id 1): present once `dk-mirror index update` has been run, so writes keep the
# index up to date from then on. `generation` changes with every change to doc_vectors, so a
# process can keep the vectors in memory and reload them only when they changed.
semantic_state = Table(
    "semantic_state",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("model", String(200), nullable=False),
    Column("generation", Integer, nullable=False),
    Column("updated_at", Float),
)
