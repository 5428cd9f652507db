"""The semantic index in the store: which documents have a current vector, building it, and
the dense ranking that hybrid search fuses with the lexical one.

The store stays the source of truth. A write deletes the vectors of the documents it changes
in the same transaction (`forget`), so no stale vector outlives its document; the new vectors
are computed after the commit (`refresh`, when the index is on and the model installed) or by
`dk-mirror index update`. A crash in between leaves documents without a current vector: `pending`
finds them (no vector for this model and this content), and `build` computes only those.
Vectors are computed with no transaction open; each batch is written in its own short one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Connection, Engine, delete, func, insert, select, update

from ...models import Document
from ..schema.embeddings import doc_vectors, semantic_state
from ..schema.tables import documents

if TYPE_CHECKING:
    from ...models import CachedDocument
    from ...semantic.matrix import Matrix
    from ...semantic.model import ModelInfo

log = logging.getLogger(__name__)

_BATCH = 500
# Documents embedded per write transaction by `build`: a crash loses at most this many.
EMBED_BATCH = 64
Progress = Callable[[int, int], None]
# Reads the stored copies of some names (Store.get_many).
Read = Callable[[Sequence[str]], Mapping[str, "CachedDocument"]]
# Documents a write embeds by itself: a fetch of a few batches (about 10 s here); more waits
# for `dk-mirror index update`, so an import of thousands of pages is not slowed by minutes.
AUTO_EMBED = 100


@dataclass(frozen=True, slots=True)
class SemanticFacts:
    """The semantic index's state: the model it was built for (None: never built), how many
    documents have a current vector, and how many wait for one."""

    model: str | None
    vectors: int
    pending: int


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
    server resizes it), a writer and a way to read documents; holds the loaded vectors."""

    def __init__(
        self, engine: Callable[[], Engine], writer: Callable[[], Connection], read: Read
    ) -> None:
        self._engine = engine
        self._writer = writer
        self._read = read
        # The vectors in memory, reloaded when their generation changes.
        self.matrix: Matrix | None = None

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

    def build(
        self,
        info: ModelInfo,
        *,
        rebuild: bool = False,
        names: Sequence[str] | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Compute the missing or stale vectors (of `names`, if given) for the installed
        model; returns how many. Turns the index on; a new model (or `rebuild`) drops every
        old vector."""
        from ...semantic.matrix import quantize
        from ...semantic.model import loaded
        from ...semantic.text import document_text

        embedder = loaded()
        with self._writer() as conn, conn.begin():
            row = _state(conn)
            if row is None:
                conn.execute(
                    insert(semantic_state).values(
                        id=1, model=info.key, generation=1, updated_at=time.time()
                    )
                )
            elif rebuild or row.model != info.key:
                conn.execute(delete(doc_vectors))
                conn.execute(
                    update(semantic_state).values(
                        model=info.key,
                        generation=semantic_state.c.generation + 1,
                        updated_at=time.time(),
                    )
                )
            todo = pending(conn, info.key, names)
        done = 0
        if progress:
            progress(0, len(todo))
        for start in range(0, len(todo), EMBED_BATCH):
            found = self._read(todo[start : start + EMBED_BATCH]).values()
            batch = [c.document for c in found if c.document.content is not None]
            texts = [document_text(d.title, d.description, d.content) for d in batch]
            self._write(info.key, batch, quantize(embedder.embed(texts)))
            done += len(batch)
            if progress:
                progress(min(start + EMBED_BATCH, len(todo)), len(todo))
        return done

    def _write(
        self, key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
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

    def refresh(self, names: Sequence[str], *, readonly: bool) -> None:
        """After a write: embed the written documents when the index is on and its model is
        installed; otherwise nothing (cheap: one small query). Never fails the write: a
        failure leaves the documents pending for `dk-mirror index update`. A bulk write (an
        import, a snapshot) of more than AUTO_EMBED documents is left to `dk-mirror index
        update` too, with its progress bar."""
        if not names or readonly:
            return
        if len(names) > AUTO_EMBED:
            log.info("semantic index: %d documents left for `dk-mirror index update`", len(names))
            return
        with self._engine().connect() as conn:
            row = _state(conn)
        if row is None:
            return  # the semantic index was never turned on
        from ...semantic.model import status

        info = status()
        if not info.available or row.model != info.key:
            return  # `doctor` says why and how to fix it
        try:
            self.build(info, names=names)
        except Exception as exc:  # the documents are stored; only their vectors wait
            log.warning(
                "semantic index: %d documents left for `dk-mirror index update`: %s",
                len(names),
                exc,
            )

    def dense(
        self, query: str, limit: int, where: ColumnElement[bool] | None = None
    ) -> list[tuple[str, float]] | None:
        """The `limit` documents nearest to `query` by their vectors, best first; None when
        the semantic tier is off (extra not installed, index never built, or built by another
        model)."""
        from ...semantic.model import loaded

        with self._engine().connect() as conn:
            row = _state(conn)
            if row is None:
                return None  # never built: stay lexical without looking for the model
            info = loaded().info  # looked up once per process: a package lookup costs ~8 ms
            if not info.available or row.model != info.key:
                return None
            matrix = self.matrix
            if matrix is None or matrix.generation != row.generation:
                from ...semantic.matrix import Matrix

                rows = conn.execute(
                    select(doc_vectors.c.name, doc_vectors.c.vector, doc_vectors.c.scale)
                    .join(documents, _current(info.key))
                    .order_by(doc_vectors.c.name)
                ).all()
                matrix = Matrix(
                    row.generation,
                    [r[0] for r in rows],
                    [r[1] for r in rows],
                    [r[2] for r in rows],
                )
                self.matrix = matrix
        vector = loaded().embed_query(query)
        ranked = matrix.top(vector, limit if where is None else max(limit * 4, 200))
        if where is None or not ranked:
            return ranked
        with self._engine().connect() as conn:
            passing = set(
                conn.execute(
                    select(documents.c.name).where(
                        documents.c.name.in_([n for n, _ in ranked]), where
                    )
                ).scalars()
            )
        return [(n, s) for n, s in ranked if n in passing][:limit]
