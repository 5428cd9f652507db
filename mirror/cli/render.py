"""Turning results into text for people and JSON for programs. No I/O beyond returning strings."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


def to_json(data: Any) -> str:
    """Indented JSON for one object: stable key order as built, UTF-8 text kept readable."""
    return json.dumps(data, ensure_ascii=False, indent=2)


def to_json_line(data: Any) -> str:
    """One compact JSON line (NDJSON), for streams of records."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def size(n: int | None) -> str:
    """Bytes as a short human figure (1.2 MB)."""
    if n is None:
        return "?"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


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
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def key_values(pairs: Mapping[str, Any]) -> str:
    """`key: value` lines with the keys aligned."""
    width = max((len(k) for k in pairs), default=0)
    return "\n".join(f"{k + ':':<{width + 1}} {v}" for k, v in pairs.items())
