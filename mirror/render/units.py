"""Quantities as people read them, shared by every shell (the terminal and the web pages)."""

from __future__ import annotations


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
