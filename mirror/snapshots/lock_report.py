"""What changed in the pinned pages, as Markdown for a pull-request comment (pure, no I/O).

`lock --check --format markdown` compares a lock with the store (typically synced from the
lock, then refreshed) and with its requirements; this module words the result: a headline, a
table with one row per page (a link to the original, the kind of change, what the diff shows,
the updateTime locked and now), then the requirement drift. Everything that came from a
document is escaped, so a title cannot inject HTML or break the table, and the whole text is
kept under `MAX_CHARS` (a GitHub comment takes 65,536), listing what was left out.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..names import PREFIX, uri_of
from .lockcheck import LockDrift

Kind = Literal["added", "changed", "removed"]
# Under GitHub's 65,536-character limit for a comment, leaving room for a heading of the caller's.
MAX_CHARS = 60_000
# Summary lines per page: the table stays readable; the command in the row shows the rest.
MAX_LINES = 5
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
# Characters Markdown or HTML would read as syntax inside a table cell.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


@dataclass(frozen=True, slots=True)
class PageChange:
    """One pinned page that differs between the lock and the store."""

    name: str
    kind: Kind
    locked_update: str | None = None
    update: str | None = None
    # What the diff shows, one short line each (see `diff_summary`).
    summary: tuple[str, ...] = field(default_factory=tuple)
    # The command that prints the whole diff, when the store can show one.
    command: str | None = None


def _headings(text: str) -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced  # a `#` comment inside a code sample is not a heading
        elif not fenced and (m := _HEADING.match(line)):
            out.append(m[2])
    return out


def diff_summary(old: str, new: str, signals: Sequence[str] = ()) -> tuple[str, ...]:
    """Short lines saying what changed from `old` to `new` Markdown: lines added and removed,
    the `signals` a reader must not miss (the change classifier's: a deprecation notice, a
    changed limit), then headings that appeared or went."""
    added = removed = 0
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    if not (added or removed):
        return ("same text; only metadata changed",)
    lines = [f"+{added} / -{removed} lines", *signals]
    was, now = _headings(old), _headings(new)
    lines += [f"new section: {h}" for h in now if h not in was]
    lines += [f"section removed: {h}" for h in was if h not in now]
    if len(lines) > MAX_LINES:
        more = len(lines) - MAX_LINES + 1
        lines = [*lines[: MAX_LINES - 1], f"and {more} more changes"]
    return tuple(lines)


def escape(text: str) -> str:
    """`text` as literal Markdown inside a table cell: syntax characters escaped, `<`, `>` and
    `&` as entities (no HTML reaches the page), line breaks as spaces."""
    flat = " ".join(text.split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SPECIAL.sub(r"\\\1", flat)


def _short(name: str) -> str:
    return name.removeprefix(PREFIX)


def _row(page: PageChange) -> str:
    link = f"[{escape(_short(page.name))}]({uri_of(page.name)})"
    what = "<br>".join(escape(line) for line in page.summary) or "—"
    if page.command:
        what += f"<br>`{page.command}`"
    when = f"{escape(page.locked_update or '—')} → {escape(page.update or '—')}"
    return f"| {page.kind} | {link} | {what} | {when} |"


def headline(pages: Sequence[PageChange], drift: LockDrift, lock_name: str) -> str:
    """One line: how many pages differ from the lock, and whether the requirements moved."""
    counts = {k: sum(p.kind == k for p in pages) for k in ("changed", "added", "removed")}
    if not pages and drift.ok:
        return f"No pinned page changed since `{lock_name}`."
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    said = ", ".join(parts) if parts else "no page changed"
    if not drift.ok:
        said += "; the requirements moved"
    return f"Pinned docs differ from `{lock_name}`: {said}."


def markdown(
    pages: Sequence[PageChange],
    drift: LockDrift,
    *,
    lock_name: str,
    requirements_name: str,
    max_chars: int = MAX_CHARS,
) -> str:
    """The summary: headline, the table of pages, the requirement drift, what to run; rows past
    `max_chars` are left out and counted, so the text fits one comment."""
    head = [f"### dk-mirror: {headline(pages, drift, lock_name)}", ""]
    tail = []
    if drift.lines():
        tail += ["", f"Requirements (`{requirements_name}`) and lock disagree:", ""]
        tail += [f"- {escape(line)}" for line in drift.lines()]
    if not drift.recorded:
        tail += ["", f"`{lock_name}` predates recorded requirements: removals were not checked."]
    if pages or not drift.ok:
        tail += ["", f"Run `dk-mirror lock` and commit `{lock_name}` to take the new versions."]
    body: list[str] = []
    if pages:
        body = ["| | Page | What changed | updateTime (locked → now) |", "|---|---|---|---|"]
    budget = max_chars - len("\n".join(head + body + tail)) - 200
    left_out = 0
    for page in pages:
        row = _row(page)
        if left_out or len(row) + 1 > budget:
            left_out += 1
            continue
        body.append(row)
        budget -= len(row) + 1
    if left_out:
        body += ["", f"…and {left_out} more page(s), left out to fit one comment."]
    return "\n".join(head + body + tail) + "\n"
