"""Turning results into text for people and JSON for programs. No I/O beyond returning strings.

Everything that came from the store or upstream passes through `clean` (tables and key/value
lists do it themselves) so that no stored byte can drive the terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

# Characters a terminal may act on rather than show: C0 controls (ESC starts colour, cursor,
# title and hyperlink sequences; CR overwrites a line), DEL, C1 controls (U+009B is a
# one-character CSI) and the bidirectional overrides and isolates that make text display in
# another order than it reads (plain LRM/RLM marks are common in right-to-left titles: kept).
_C0_BUT_TAB_NL = "\x00-\x08\x0b-\x1f"
_OTHERS = "\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[\t\n{_C0_BUT_TAB_NL}{_OTHERS}]")
_UNSAFE_TEXT = re.compile(f"[{_C0_BUT_TAB_NL}{_OTHERS}]")
# What json.dumps(ensure_ascii=False) leaves raw: it escapes only C0 controls.
_UNSAFE_JSON = re.compile(f"[{_OTHERS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: str, *, multiline: bool = False) -> str:
    """`text` from stored or upstream data, safe to print: control characters as escapes.

    Names, titles and one-line fields escape everything (a newline would forge a row);
    `multiline` keeps newlines and tabs, for messages, answers and snippets.
    """
    return (_UNSAFE_TEXT if multiline else _UNSAFE_LINE).sub(_escape, text)


def to_json(data: Any) -> str:
    """Indented JSON for one object: stable key order as built, UTF-8 text kept readable."""
    return _json_safe(json.dumps(data, ensure_ascii=False, indent=2))


def to_json_line(data: Any) -> str:
    """One compact JSON line (NDJSON), for streams of records."""
    return _json_safe(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _json_safe(text: str) -> str:
    # These characters occur only inside JSON strings, where \uXXXX means the same character:
    # the JSON is unchanged for a program and harmless on a terminal.
    return _UNSAFE_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def age(seconds: float | None) -> str:
    """A duration as the largest sensible unit (3d, 5h, 12m, 40s)."""
    if seconds is None:
        return "never"
    seconds = max(0.0, seconds)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{seconds / span:.0f}{unit}"
    return f"{seconds:.0f}s"


def table(rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    if not rows:
        return ""
    rows = [[clean(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


# Rows a streamed table reads before printing them: enough to size its columns, few enough that
# `ls | head` prints at once on a store of a million documents.
TABLE_BLOCK = 100


def table_lines(rows: Iterable[Sequence[str]], block: int = TABLE_BLOCK) -> Iterator[str]:
    """`table`'s lines, streamed: columns are sized on each block of `block` rows and only
    ever widen, so memory holds one block whatever the number of rows."""
    widths: list[int] = []
    pending: list[list[str]] = []

    def flush() -> Iterator[str]:
        for i in range(len(pending[0]) - 1):
            wide = max(len(row[i]) for row in pending)
            if i < len(widths):
                widths[i] = max(widths[i], wide)
            else:
                widths.append(wide)
        for row in pending:
            cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
            yield "  ".join([*cells, row[-1]]).rstrip()
        pending.clear()

    for row in rows:
        pending.append([clean(cell) for cell in row])
        if len(pending) >= block:
            yield from flush()
    if pending:
        yield from flush()


def key_values(pairs: Mapping[str, Any]) -> str:
    """`key: value` lines with the keys aligned (values escaped like table cells)."""
    width = max((len(k) for k in pairs), default=0)
    return "\n".join(f"{k + ':':<{width + 1}} {clean(str(v))}" for k, v in pairs.items())
