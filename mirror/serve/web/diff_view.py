"""A unified diff as table rows for the history page (pure): each line with its kind and its
line numbers on the old and new side, so the template only draws them."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A page's diff is shown up to this many lines; the rest is left to `dk-mirror diff`.
MAX_ROWS = 5000
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True, slots=True)
class DiffRow:
    """One line of a diff: kind `hunk`, `add`, `del` or `ctx`, and its line numbers."""

    kind: str
    text: str
    old: int | None = None
    new: int | None = None


@dataclass(frozen=True, slots=True)
class DiffTable:
    """The rows shown, how many lines each side gained and lost, and whether rows were cut."""

    rows: list[DiffRow]
    added: int
    removed: int
    truncated: bool


def diff_rows(text: str, *, limit: int = MAX_ROWS) -> DiffTable:
    """The rows of a unified diff (`---`/`+++` file lines dropped: the page names both sides)."""
    rows: list[DiffRow] = []
    added = removed = 0
    old = new = 0
    for line in text.splitlines():
        if line.startswith(("--- ", "+++ ")) and not rows:
            continue
        if m := _HUNK.match(line):
            old, new = int(m[1]), int(m[2])
            row = DiffRow("hunk", line)
        elif line.startswith("+"):
            added += 1
            row, new = DiffRow("add", line[1:], None, new), new + 1
        elif line.startswith("-"):
            removed += 1
            row, old = DiffRow("del", line[1:], old, None), old + 1
        else:
            row = DiffRow("ctx", line[1:], old, new)
            old, new = old + 1, new + 1
        rows.append(row)
    return DiffTable(rows[:limit], added, removed, len(rows) > limit)
