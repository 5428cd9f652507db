"""How fresh each data source's copies are, and the chart that shows it (pure).

A copy's age is the time since it was last fetched or confirmed unchanged by a refresh. Each
data source is drawn as one row on a logarithmic time axis: a line from its newest to its
oldest copy, a box over the middle half, a tick at the median, and a dashed rule at the age
after which a refresh is due; a row whose oldest copy crosses the rule is marked due, with the
command that refreshes just those copies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from ...models import Summary, data_source_of
from .views import DAY

HOUR = 3600.0
# Without a configured max age, copies older than this are called due for a refresh.
DEFAULT_REFRESH_AFTER = 7 * DAY
# The axis starts at an hour (younger copies sit at its left edge) and ends at a year or more.
AXIS_FROM = HOUR
AXIS_TO = 365 * DAY
TICKS = ((HOUR, "1 hour"), (DAY, "1 day"), (7 * DAY, "7 days"), (30 * DAY, "30 days"),
         (90 * DAY, "90 days"), (365 * DAY, "1 year"))  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourceFreshness:
    """Ages (seconds) of one data source's copies, and how many are past the refresh age."""

    source: str
    count: int
    newest: float
    quartile1: float
    median: float
    quartile3: float
    oldest: float
    due: int  # copies older than the refresh age


def _quantile(ordered: list[float], q: float) -> float:
    # Nearest rank: an age some copy really has.
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def freshness(
    summaries: Iterable[Summary], now: float, refresh_after: float
) -> list[SourceFreshness]:
    """Per data source (sorted), the spread of its copies' ages and how many are due."""
    ages: dict[str, list[float]] = {}
    for summary in summaries:
        source = summary.data_source or data_source_of(summary.name) or "(unknown)"
        ages.setdefault(source, []).append(max(0.0, now - summary.fetched_at))
    out = []
    for source, found in sorted(ages.items()):
        found.sort()
        out.append(SourceFreshness(
            source, len(found), found[0], _quantile(found, 0.25), _quantile(found, 0.5),
            _quantile(found, 0.75), found[-1], sum(age > refresh_after for age in found),
        ))  # fmt: skip
    return out


@dataclass(frozen=True, slots=True)
class FreshnessRow:
    """One data source's marks, in SVG user units."""

    y: float
    item: SourceFreshness
    x_newest: float
    x_q1: float
    x_median: float
    x_q3: float
    x_oldest: float


@dataclass(frozen=True, slots=True)
class FreshnessChart:
    """Geometry of the freshness chart; the template only draws it."""

    width: int
    height: int
    left: int
    plot_width: int
    rows: list[FreshnessRow]
    ticks: list[tuple[float, str]]
    rule_x: float  # the refresh age
    axis_y: float


def freshness_chart(
    items: list[SourceFreshness], refresh_after: float, *, width: int = 760
) -> FreshnessChart:
    """Rows on a log time axis from an hour to a year (or the oldest copy, if older)."""
    left, right, row_height = 230, 150, 30
    plot = width - left - right
    top = max([AXIS_TO, refresh_after * 2, *(i.oldest for i in items)])
    span = math.log(top / AXIS_FROM)

    def x(age: float) -> float:
        return left + plot * math.log(max(age, AXIS_FROM) / AXIS_FROM) / span

    rows = []
    for i, it in enumerate(items):
        marks = (x(it.newest), x(it.quartile1), x(it.median), x(it.quartile3), x(it.oldest))
        rows.append(FreshnessRow(8 + i * row_height, it, *marks))
    axis_y = 8 + len(items) * row_height + 4
    ticks = [(x(age), label) for age, label in TICKS if age <= top]
    return FreshnessChart(
        width, int(axis_y + 40), left, plot, rows, ticks, x(refresh_after), axis_y
    )


def duration_label(seconds: float) -> str:
    """`seconds` as the `--older-than` value a user would type: `7d`, `12h`, `30m`."""
    for unit, size in (("d", DAY), ("h", HOUR), ("m", 60.0)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
