"""Classify a change between two versions of a page: what it touched, and what must not be
missed. Pure: two Markdown texts in, a Verdict out.

- cosmetic: nothing but whitespace, link targets or table layout changed;
- text: prose, table cells or notice wording changed;
- code: a code sample changed, appeared or went;
- structure: a heading was added, removed or renamed;
- signal: a deprecation, caution or warning notice appeared or went, a number in a limits,
  quota or pricing table changed, or an API version string changed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher

from .events import CODE, COSMETIC, SIGNAL, STRUCTURE, TEXT
from .markdown import Notice, Parts, Table, parse

# A table is about limits when its heading, the paragraph before it or its header says so.
_LIMITS = re.compile(
    r"\b(limits?|quotas?|pricing|prices?|costs?|maximum|minimum|max|min|rates?|thresholds?"
    r"|per (?:second|minute|hour|day|month|request|project|user))\b",
    re.I,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# API version strings: v1, v1beta, v2alpha1, v1p1beta1 (Google's scheme), manifest versions,
# Android API levels. The CSS/JS `v8` engine is not a version of an API.
# Each starts with a letter, not a lookbehind or an alternation: the engine then tries it only
# where that letter is, not at every position of the page (a change is classified inside the
# write that stores it). What precedes the `v` is checked after it.
_VERSIONS = (
    (re.compile(r"[vV](?<![\w.-][vV])(\d+(?:\.\d+)?(?:p\d+)?(?:alpha|beta)?\d*)(?![\w-])"), "v"),
    (re.compile(r"manifest_version\W{1,4}(\d+)"), "manifest_version "),
    (re.compile(r"API level (\d+)"), "API level "),
)
_NOT_VERSIONS = frozenset({"v8"})
# "deprecated", "deprecation", "deprecates": a substring test, cheaper than a pattern.
_DEPRECATION = "deprecat"
# Notice types a reader must not miss (Google's asides and alerts), besides deprecations.
_LOUD = frozenset({"warning", "caution", "danger", "gotchas"})
_SUMMARY_CHARS = 200


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a change touched (classes, most important first) and its one-line summary."""

    classes: tuple[str, ...]
    signals: tuple[str, ...]  # each signal in words: "warning notice added"
    summary: str


def classify(old: str, new: str) -> Verdict:
    """The verdict on a change of a page's Markdown from `old` to `new`."""
    before, after = parse(old), parse(new)
    signals = [
        *_notices(before, after),
        *_limits(before, after),
        *_limits_in_prose(before, after),
        *_versions(old, new),
    ]
    details: list[str] = []
    classes: list[str] = []
    if signals:
        classes.append(SIGNAL)
    gained = Counter(after.headings) - Counter(before.headings)
    lost = Counter(before.headings) - Counter(after.headings)
    if gained or lost:
        classes.append(STRUCTURE)
        details.extend(f"heading {h!r} added" for h in gained)
        details.extend(f"heading {h!r} removed" for h in lost)
    if before.code != after.code:
        classes.append(CODE)
        details.append(_count_change("code sample", before.code, after.code))
    if before.paragraphs != after.paragraphs or _rows(before) != _rows(after):
        classes.append(TEXT)
        details.append("text changed")
    if not classes:
        classes.append(COSMETIC)
        details.append("cosmetic only (whitespace, links or table layout)")
    summary = "; ".join([*signals, *details])
    if len(summary) > _SUMMARY_CHARS:
        summary = summary[: _SUMMARY_CHARS - 1] + "…"
    return Verdict(tuple(classes), tuple(signals), summary)


def _count_change(what: str, old: list[str], new: list[str]) -> str:
    if len(new) > len(old):
        return f"{what} added"
    if len(new) < len(old):
        return f"{what} removed"
    changed = sum(1 for a, b in zip(old, new, strict=True) if a != b)
    return f"{what} changed" if changed == 1 else f"{changed} {what}s changed"


def _rows(parts: Parts) -> list[tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]]:
    return [(t.header, t.rows) for t in parts.tables]


def _notice_kinds(parts: Parts) -> Counter[str]:
    """How many notices of each loud kind a page has (deprecation: any notice or paragraph
    that says a thing is deprecated)."""
    found: Counter[str] = Counter()
    for notice in parts.notices:
        if notice.kind in _LOUD and not _deprecates(notice.text):
            found[_loud_name(notice)] += 1
    deprecations = {p for p in parts.paragraphs if _deprecates(p)}
    deprecations.update(n.text for n in parts.notices if _deprecates(n.text))
    deprecations.update(h for h in parts.headings if _deprecates(h))
    found["deprecation"] = len(deprecations)
    return found


def _deprecates(text: str) -> bool:
    return _DEPRECATION in text.lower()


def _loud_name(notice: Notice) -> str:
    return "caution" if notice.kind == "gotchas" else notice.kind


def _notices(before: Parts, after: Parts) -> list[str]:
    old, new = _notice_kinds(before), _notice_kinds(after)
    out = []
    for kind in sorted(set(old) | set(new), key=lambda k: (k != "deprecation", k)):
        if new[kind] > old[kind]:
            out.append(f"{kind} notice added")
        elif new[kind] < old[kind]:
            out.append(f"{kind} notice removed")
    return out


def _limit_rows(parts: Parts) -> dict[tuple[str, str], dict[str, str]]:
    """(heading, row key) -> {column: cell} for the rows of limits tables that hold numbers."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for table in parts.tables:
        if not _is_limits(table):
            continue
        for row in table.rows:
            if row and any(_NUMBER.search(cell) for cell in row[1:]):
                found[(table.heading, row[0])] = dict(zip(table.header[1:], row[1:], strict=False))
    return found


def _is_limits(table: Table) -> bool:
    return bool(_LIMITS.search(table.context) or _LIMITS.search(" ".join(table.header)))


def _limits(before: Parts, after: Parts) -> list[str]:
    """One signal per row of a limits table whose numbers changed."""
    old, new = _limit_rows(before), _limit_rows(after)
    out = []
    for key in sorted(old.keys() & new.keys()):
        was, now = old[key], new[key]
        moved = [
            f"{column} {was[column]} -> {now[column]}"
            for column in was
            if column in now and _NUMBER.findall(was[column]) != _NUMBER.findall(now[column])
        ]
        if moved:
            out.append(f"limit changed: {key[1]}: {'; '.join(moved)}")
    return out


def _limits_in_prose(before: Parts, after: Parts) -> list[str]:
    """A paragraph about limits whose words stayed and whose numbers changed."""
    out = []
    matcher = SequenceMatcher(None, before.paragraphs, after.paragraphs, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace":
            continue
        for was, now in zip(before.paragraphs[i1:i2], after.paragraphs[j1:j2], strict=False):
            if not _LIMITS.search(was) or _NUMBER.sub("#", was) != _NUMBER.sub("#", now):
                continue
            old, new = _NUMBER.findall(was), _NUMBER.findall(now)
            changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
            words = _LIMITS.search(was)
            assert words is not None
            out.append(f"limit changed: {words.group(0)} "
                       + ", ".join(f"{a} -> {b}" for a, b in changed))  # fmt: skip
    return out


def _version_strings(text: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for pattern, label in _VERSIONS:
        for match in pattern.finditer(text):
            token = label + match.group(1).lower()
            if token not in _NOT_VERSIONS:
                found[token] += 1
    return found


def _versions(old: str, new: str) -> list[str]:
    before, after = set(_version_strings(old)), set(_version_strings(new))
    if before == after:
        return []
    gone, came = sorted(before - after), sorted(after - before)
    if gone and came:
        return [f"API version changed: {', '.join(gone)} -> {', '.join(came)}"]
    if came:
        return [f"API version added: {', '.join(came)}"]
    return [f"API version removed: {', '.join(gone)}"]
