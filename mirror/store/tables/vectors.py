"""The semantic index in the store: its vectors, which documents have a current one, and
which model they are of. The store keeps and reads vectors; it never runs a model
(mirror/service/semantic.py decides what to embed, embeds, and ranks).

The store stays the source of truth. A write deletes the vectors of the documents it changes
in the same transaction (`forget`), so no stale vector outlives its document; the new vectors
are computed after the commit, or by `dk-mirror index update`. A crash in between leaves
documents without a current vector: `pending` finds them (no vector for this model and this
content), and only those are computed. Vectors are computed with no transaction open; each
batch is written in its own short one (`write`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, delete, func, insert, select, update

from ...models import Document
from ..schema.embeddings import doc_vectors, semantic_state
from ..schema.tables import documents
from .vector_state import SemanticFacts, VectorState

_BATCH = 500


def forget(conn: Connection, names: Sequence[str]) -> None:
    """Delete the vectors of `names` (inside the writer's transaction that changes them)."""
    if not names:
        return
    for start in range(0, len(names), _BATCH):
        part = list(names[start : start + _BATCH])
        conn.execute(delete(doc_vectors).where(doc_vectors.c.name.in_(part)))
    _bump(conn)


def _bump(conn: Connection) -> None:
    conn.execute(update(semantic_state).values(generation=semantic_state.c.generation + 1))


def _state(conn: Connection) -> Any:
    return conn.execute(
        select(semantic_state.c.model, semantic_state.c.generation).where(semantic_state.c.id == 1)
    ).first()


def _current(key: str) -> ColumnElement[bool]:
    # The join condition of a current vector: this model, and the document's content as it is.
    return (
        (doc_vectors.c.name == documents.c.name)
        & (doc_vectors.c.model == key)
        & doc_vectors.c.content_sha256.is_not_distinct_from(documents.c.content_sha256)
    )


def pending(conn: Connection, key: str, names: Sequence[str] | None = None) -> list[str]:
    """Documents with content and no current vector for model `key` (of `names`, if given)."""
    query = (
        select(documents.c.name)
        .outerjoin(doc_vectors, _current(key))
        .where(documents.c.content.is_not(None), doc_vectors.c.name.is_(None))
        .order_by(documents.c.name)
    )
    if names is None:
        return list(conn.execute(query).scalars())
    found: list[str] = []
    wanted = sorted(set(names))
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        found += conn.execute(query.where(documents.c.name.in_(part))).scalars()
    return found


class Vectors:
    """The semantic index of one store, built from its engine (as it is at each call: a
    server resizes it) and a writer."""

    def __init__(self, engine: Callable[[], Engine], writer: Callable[[], Connection]) -> None:
        self._engine = engine
        self._writer = writer

    def facts(self, key: str) -> SemanticFacts:
        """Where the semantic index stands for model `key`."""
        with self._engine().connect() as conn:
            row = _state(conn)
            current = conn.execute(
                select(func.count()).select_from(doc_vectors.join(documents, _current(key)))
            ).scalar_one()
            waiting = conn.execute(
                select(func.count())
                .select_from(documents.outerjoin(doc_vectors, _current(key)))
                .where(documents.c.content.is_not(None), doc_vectors.c.name.is_(None))
            ).scalar_one()
        return SemanticFacts(row.model if row else None, int(current), int(waiting))

    def state(self) -> VectorState | None:
        """The index's model and generation; None when it was never built."""
        with self._engine().connect() as conn:
            row = _state(conn)
        return None if row is None else VectorState(row.model, int(row.generation))

    def begin(
        self, key: str, *, rebuild: bool = False, names: Sequence[str] | None = None
    ) -> list[str]:
        """Turn the index on for model `key` (a new model, or `rebuild`, drops every old
        vector); returns the documents (of `names`, if given) without a current vector."""
        with self._writer() as conn, conn.begin():
            row = _state(conn)
            if row is None:
                conn.execute(
                    insert(semantic_state).values(
                        id=1, model=key, generation=1, updated_at=time.time()
                    )
                )
            elif rebuild or row.model != key:
                conn.execute(delete(doc_vectors))
                conn.execute(
                    update(semantic_state).values(
                        model=key,
                        generation=semantic_state.c.generation + 1,
                        updated_at=time.time(),
                    )
                )
            return pending(conn, key, names)

    def write(
        self, key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
        """Store the vectors (quantized: bytes and scale) of `docs` for model `key`, in one
        transaction; a document deleted meanwhile is skipped."""
        from ...models import content_sha256

        rows = [
            {
                "name": doc.name,
                "model": key,
                "content_sha256": content_sha256(doc.content) if doc.content is not None else None,
                "vector": blob,
                "scale": scale,
            }
            for doc, (blob, scale) in zip(docs, vectors, strict=True)
        ]
        with self._writer() as conn, conn.begin():
            names = [r["name"] for r in rows]
            conn.execute(delete(doc_vectors).where(doc_vectors.c.name.in_(names)))
            # A document deleted while its vector was computed has no row to point at: skip it.
            alive = set(
                conn.execute(select(documents.c.name).where(documents.c.name.in_(names))).scalars()
            )
            rows = [r for r in rows if r["name"] in alive]
            if rows:
                conn.execute(insert(doc_vectors), rows)
            _bump(conn)
            conn.execute(update(semantic_state).values(updated_at=time.time()))

    def rows(self, key: str) -> tuple[VectorState | None, list[str], list[bytes], list[float]]:
        """The index's state and the current vectors of model `key` (names, bytes, scales),
        in name order, read in one snapshot."""
        with self._engine().connect() as conn, conn.begin():
            row = _state(conn)
            found = conn.execute(
                select(doc_vectors.c.name, doc_vectors.c.vector, doc_vectors.c.scale)
                .join(documents, _current(key))
                .order_by(doc_vectors.c.name)
            ).all()
        state = None if row is None else VectorState(row.model, int(row.generation))
        return state, [r[0] for r in found], [r[1] for r in found], [r[2] for r in found]

    def passing(self, names: Sequence[str], where: ColumnElement[bool]) -> set[str]:
        """The names among `names` whose documents pass `where`."""
        with self._engine().connect() as conn:
            query = select(documents.c.name).where(documents.c.name.in_(list(names)), where)
            return set(conn.execute(query).scalars())
