"""A change log event and the filter that selects events: plain data, no I/O.

The store appends events (mirror/store/tables/changes.py) and reads them back through
`ChangeFilter`; the CLI, the feeds, the browser and the MCP tool all print `ChangeEvent`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..models import rfc3339

ADDED, CHANGED, REMOVED = "added", "changed", "removed"
KINDS = (ADDED, CHANGED, REMOVED)

# What a change touched, as bits of one integer column (a filter is one `&` in SQL).
# Ordered from the most to the least a reader must see: a summary lists them in this order.
SIGNAL, STRUCTURE, CODE, TEXT, COSMETIC = "signal", "structure", "code", "text", "cosmetic"
CLASS_BITS = {SIGNAL: 16, STRUCTURE: 8, CODE: 4, TEXT: 2, COSMETIC: 1}
CLASSES = tuple(CLASS_BITS)


def to_bits(classes: tuple[str, ...] | list[str] | set[str]) -> int:
    """The bits of `classes` (names from CLASSES)."""
    return sum(CLASS_BITS[c] for c in set(classes))


def from_bits(bits: int | None) -> tuple[str, ...] | None:
    """The class names of `bits`, most important first (None: not classified)."""
    if bits is None:
        return None
    return tuple(c for c, bit in CLASS_BITS.items() if bits & bit)


@dataclass(frozen=True, slots=True)
class ChangeEvent:
    """One change of what the store holds: a document added, its content changed, or removed."""

    id: int
    name: str
    observed_at: float
    kind: str  # ADDED, CHANGED or REMOVED
    old_sha256: str | None
    new_sha256: str | None
    old_update_time: str | None
    new_update_time: str | None
    classes: tuple[str, ...] | None = None  # None: not classified (derived at upgrade)
    summary: str | None = None

    def headline(self) -> str:
        """A one-line summary: what happened and, for a change, what it touched."""
        if self.kind != CHANGED:
            return self.kind
        if self.summary:
            return self.summary
        if self.classes is None:
            return "changed (not classified: recorded before the change log began)"
        return "changed: " + ", ".join(self.classes)

    def diff_command(self) -> str:
        """The command that shows this change: its diff, or the document's history."""
        name = shlex.quote(self.name)
        if self.kind != CHANGED or self.new_sha256 is None:
            return f"dk-mirror history {name}"
        # 12 hex digits name one version of one document for any practical history.
        if self.old_sha256 is None:  # its predecessor was pruned before the log began
            return f"dk-mirror diff {name} --to {self.new_sha256[:12]}"
        return f"dk-mirror diff {name} --from {self.old_sha256[:12]} --to {self.new_sha256[:12]}"

    def to_json(self) -> dict[str, Any]:
        """As `changes --json`, the JSON feed and the MCP tool print it."""
        return {
            "id": self.id,
            "name": self.name,
            "observedAt": rfc3339(self.observed_at),
            "kind": self.kind,
            "classes": list(self.classes) if self.classes is not None else None,
            "summary": self.headline(),
            "old": _side(self.old_sha256, self.old_update_time),
            "new": _side(self.new_sha256, self.new_update_time),
            "diffCommand": self.diff_command(),
        }


def _side(sha256: str | None, update_time: str | None) -> dict[str, Any] | None:
    if sha256 is None:
        return None
    return {"sha256": f"sha256:{sha256}", "updateTime": update_time}


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """Which events to read, newest first: all of them by default, at most `limit`.

    `since_id`: only events after this id; `since`: only events observed at or after this
    time (Unix seconds); `prefix`: names starting with it; `kind`: a kind (added, changed,
    removed) or a class (signal, structure, code, text, cosmetic); `names`: only these
    documents (a lock file's); `before_id`: only events before this id (the next page);
    `until`: only events observed before this time (the log as it stood then, for --as-of).
    """

    since_id: int | None = None
    since: float | None = None
    prefix: str | None = None
    kind: str | None = None
    names: frozenset[str] | None = None
    before_id: int | None = None
    until: float | None = None
    limit: int = 100

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KINDS and self.kind not in CLASS_BITS:
            raise InvalidInput(
                f"unknown change kind {self.kind!r}",
                hint=f"use one of: {', '.join(KINDS + CLASSES)}",
            )
        if self.limit < 1:
            raise InvalidInput(f"limit must be at least 1, not {self.limit}")
