"""`--since` for the change log: a number of events back in time, an event id, or a date."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

from ..config import parse_duration
from ..errors import InvalidInput
from ..timestamps import instant_key

_AGO = re.compile(r"^\s*\d+(?:\.\d+)?\s*[smhdw]\s*$")
_ID = re.compile(r"^\s*#?\d+\s*$")


@dataclass(frozen=True, slots=True)
class Since:
    """Where a listing starts: after an event id, or at a time (Unix seconds)."""

    after_id: int | None = None
    at: float | None = None


def parse_since(text: str, now: float) -> Since:
    """`7d` (that long before `now`), `1234` or `#1234` (after that event id), or a date:
    `2026-11-30` (its start, UTC) or an RFC 3339 time."""
    if _AGO.match(text):
        return Since(at=now - parse_duration(text))
    if _ID.match(text):
        return Since(after_id=int(text.strip().lstrip("#")))
    stripped = text.strip()
    try:
        day = date.fromisoformat(stripped)
    except ValueError:
        day = None
    if day is not None:
        return Since(at=datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    key = instant_key(stripped)
    if key is not None:
        return Since(at=datetime.fromisoformat(key[:26]).replace(tzinfo=UTC).timestamp())
    raise InvalidInput(
        f"{text!r} is not a time to list changes since",
        hint="give a duration (7d, 12h), an event id (1234) or a date (2026-11-30, "
        "2026-11-30T12:00:00Z)",
    )
