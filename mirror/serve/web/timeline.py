"""The changes page's timeline (pure): change-log events binned per day and per section, laid
out as rows of dots on a time axis, and the link each entry opens (its diff).

A section is a data source and its first folders (`developer.chrome.com/docs/extensions`),
so a busy site spreads over a few readable rows rather than one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from ... import names as naming
from ...changes.events import ADDED, CHANGED, REMOVED, SIGNAL, ChangeEvent
from .views import DAY

# Folders below the host that name a section (`docs/extensions` under developer.chrome.com).
SECTION_DEPTH = 2
# Rows drawn at most; the quietest sections beyond are counted, not drawn.
MAX_ROWS = 24


def section_of(name: str) -> str:
    """The section a document belongs to: its host and up to SECTION_DEPTH folders above it."""
    parts = name.removeprefix(naming.PREFIX).split("/")
    return "/".join(parts[: 1 + min(SECTION_DEPTH, len(parts) - 2)] if len(parts) > 1 else parts)


def short(name: str) -> str:
    """A document name without `documents/`."""
    return name.removeprefix(naming.PREFIX)


def history_url(name: str) -> str:
    """The history page of `name` (the feeds' `diff_path` gives a change's diff there)."""
    return "/history/" + quote(short(name), safe="/-._~")


def tone(events: Sequence[ChangeEvent]) -> str:
    """The colour class of a group of events: a signal first, then removals, additions."""
    if any(e.classes and SIGNAL in e.classes for e in events):
        return SIGNAL
    kinds = {e.kind for e in events}
    return next(k for k in (REMOVED, ADDED, CHANGED) if k in kinds)


@dataclass(frozen=True, slots=True)
class Dot:
    """The events of one section on one day."""

    x: float
    r: float
    count: int
    tone: str
    day: str
    url: str


@dataclass(slots=True)
class Row:
    """One section's dots."""

    y: float
    section: str
    total: int
    url: str
    dots: list[Dot] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Geometry of the timeline; the template only draws it."""

    width: int
    height: int
    left: int
    plot_width: int
    rows: list[Row]
    ticks: list[tuple[float, str]]
    axis_y: float
    hidden_sections: int


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def timeline(events: Sequence[ChangeEvent], now: float, days: int, *, width: int = 760) -> Timeline:
    """Rows per section (busiest first), a dot per day with changes, today at the right."""
    left, right, row_height = 260, 60, 28
    plot = width - left - right
    by_section: dict[str, dict[int, list[ChangeEvent]]] = {}
    for event in events:
        age = int(max(0.0, now - event.observed_at) // DAY)
        if age < days:
            by_section.setdefault(section_of(event.name), {}).setdefault(age, []).append(event)
    ranked = sorted(by_section.items(), key=lambda kv: (-sum(map(len, kv[1].values())), kv[0]))

    def x(age_days: float) -> float:
        return left + plot * (1 - (age_days + 0.5) / days)

    rows = []
    for i, (section, bins) in enumerate(ranked[:MAX_ROWS]):
        url = "/changes?" + urlencode({"prefix": section + "/", "days": days})
        row = Row(8 + i * row_height, section, sum(map(len, bins.values())), url)
        for age, group in sorted(bins.items()):
            r = min(11.0, 3.0 + 2.0 * math.sqrt(len(group)))
            row.dots.append(Dot(x(age), r, len(group), tone(group), _day(now - age * DAY), url))
        rows.append(row)
    axis_y = 8 + max(1, len(rows)) * row_height
    step = max(1, days // 6)
    ticks = [(x(age), "today" if age == 0 else _day(now - age * DAY)[5:])
             for age in range(0, days, step)]  # fmt: skip
    return Timeline(width, int(axis_y + 30), left, plot, rows, ticks, axis_y,
                    max(0, len(ranked) - MAX_ROWS))  # fmt: skip
