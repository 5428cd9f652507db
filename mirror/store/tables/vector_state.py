"""What the semantic index's state reads back as: plain records with no SQLAlchemy, so the
cold-start Reader (reader.py) can return them without loading the toolkit."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class VectorState:
    """The model the semantic index was built for, and its generation (which changes with
    every change to its vectors)."""

    model: str
    generation: int


@dataclass(frozen=True, slots=True)
class SemanticFacts:
    """The semantic index's state: the model it was built for (None: never built), how many
    documents have a current vector, and how many wait for one."""

    model: str | None
    vectors: int
    pending: int
