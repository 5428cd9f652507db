"""Does a lock still match its requirements? (`dk-mirror lock --check`, pure, no network.)

A lock records the requirements it was made from (`# requires ...` lines), so a name, prefix or
search added to or removed from `dk-mirror.toml` shows as a difference without asking anyone.
A lock made before those lines existed is judged by what its entries can show: every required
name is locked and every required prefix has a locked name under it (removals and searches
cannot be seen there, and the report says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .lockfile import Lock, Requirements, search_key

KINDS = ("name", "prefix", "search")
# The toml's own keys, for --json.
_PLURAL = {"name": "names", "prefix": "prefixes", "search": "searches"}


def _keys(needs: Requirements) -> dict[str, set[str]]:
    return {
        "name": set(needs.names),
        "prefix": set(needs.prefixes),
        "search": {search_key(s) for s in needs.searches},
    }


@dataclass(slots=True)
class LockDrift:
    """How a lock differs from the requirements: each as `(kind, value)`, sorted."""

    added: list[tuple[str, str]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    # Required, recorded or not, yet with no locked document (a hand-edited or merged lock).
    unlocked: list[tuple[str, str]] = field(default_factory=list)
    # False for a lock made before requirements were recorded: removals could not be checked.
    recorded: bool = True

    @property
    def ok(self) -> bool:
        """True when the lock matches the requirements."""
        return not (self.added or self.removed or self.unlocked)

    def lines(self) -> list[str]:
        """One human line per difference, e.g. `added to the requirements: name documents/x`."""
        return (
            [f"added to the requirements, not in the lock: {k} {v}" for k, v in self.added]
            + [
                f"removed from the requirements, still in the lock: {k} {v}"
                for k, v in self.removed
            ]
            + [f"required but no document is locked for it: {k} {v}" for k, v in self.unlocked]
        )

    def to_json(self) -> dict[str, Any]:
        """As `lock --check --json` prints it."""

        def grouped(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
            return {_PLURAL[kind]: [v for k, v in pairs if k == kind] for kind in KINDS}

        return {
            "ok": self.ok,
            "recorded": self.recorded,
            "added": grouped(self.added),
            "removed": grouped(self.removed),
            "unlocked": grouped(self.unlocked),
        }


def compare(needs: Requirements, lock: Lock) -> LockDrift:
    """How `lock` differs from `needs` (what `dk-mirror lock` would now have to change)."""
    locked = [e.name for e in lock.entries]
    locked_set = set(locked)
    unlocked = [("name", n) for n in sorted(needs.names) if n not in locked_set]
    unlocked += [
        ("prefix", p) for p in sorted(needs.prefixes) if not any(n.startswith(p) for n in locked)
    ]
    if lock.made_from is None:
        # An old lock: all it can show is which requirements it covers.
        return LockDrift(unlocked=unlocked, recorded=False)
    want, had = _keys(needs), _keys(lock.made_from)
    drift = LockDrift(
        added=[(k, v) for k in KINDS for v in sorted(want[k] - had[k])],
        removed=[(k, v) for k in KINDS for v in sorted(had[k] - want[k])],
    )
    # A newly added name or prefix is already reported as added; say it once.
    drift.unlocked = [u for u in unlocked if u not in drift.added]
    return drift
