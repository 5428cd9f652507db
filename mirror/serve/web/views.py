"""Pure helpers for the browser pages: the path tree, age buckets and the status chart."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import quote

from ... import names as naming
from ...models import Summary, data_source_of

DAY = 86400.0
# Upper bounds (seconds since fetch) of the age buckets; the last bucket is open-ended.
AGE_BUCKETS: tuple[tuple[str, float], ...] = (
    ("< 1 day", DAY),
    ("< 7 days", 7 * DAY),
    ("< 30 days", 30 * DAY),
    ("< 90 days", 90 * DAY),
    ("older", float("inf")),
)
# The most entries one folder page lists; a host can hold tens of thousands of pages.
MAX_LISTED = 2000


def when(ts: float | None) -> str:
    """A timestamp as `YYYY-MM-DD HH:MM UTC` (or an em dash when unknown)."""
    if ts is None:
        return "—"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def ago(ts: float | None, now: float) -> str:
    """How long ago `ts` was, in the largest sensible unit."""
    if ts is None:
        return "never"
    seconds = max(0.0, now - ts)
    for unit, size in (("day", DAY), ("hour", 3600.0), ("minute", 60.0)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def browse_path(prefix: str) -> str:
    """The /browse/ URL of a folder prefix such as `documents/host/docs/`."""
    return "/browse/" + quote(prefix[len(naming.PREFIX) :], safe="/-._~")


@dataclass(frozen=True, slots=True)
class Folder:
    """A sub-folder in a listing, with how many documents lie below it."""

    segment: str
    url: str
    count: int


@dataclass(slots=True)
class Listing:
    """One level of the tree: sub-folders, documents, and the folder's own page if any."""

    prefix: str
    folders: list[Folder] = field(default_factory=list)
    documents: list[Summary] = field(default_factory=list)
    own_page: Summary | None = None
    total: int = 0
    truncated: bool = False


def listing(prefix: str, summaries: Iterable[Summary]) -> Listing:
    """Group the documents under `prefix` (ending in `/`) by their next path segment."""
    out = Listing(prefix)
    counts: dict[str, int] = {}
    own = prefix.rstrip("/")
    for summary in summaries:
        if summary.name == own:
            out.own_page = summary
            continue
        rest = summary.name[len(prefix) :]
        if not summary.name.startswith(prefix) or not rest:
            continue
        out.total += 1
        head, sep, _ = rest.partition("/")
        if sep:
            counts[head] = counts.get(head, 0) + 1
        elif len(out.documents) < MAX_LISTED:
            out.documents.append(summary)
        else:
            out.truncated = True
    out.folders = [
        Folder(seg, browse_path(prefix + seg + "/"), n) for seg, n in sorted(counts.items())
    ]
    return out


def crumbs(prefix: str) -> list[tuple[str, str]]:
    """(label, url) for each folder above and including `prefix`, for breadcrumbs."""
    parts = [p for p in prefix[len(naming.PREFIX) :].split("/") if p]
    out = [("All hosts", "/browse/")]
    for i, part in enumerate(parts):
        out.append((part, browse_path(naming.PREFIX + "/".join(parts[: i + 1]) + "/")))
    return out


@dataclass(frozen=True, slots=True)
class SourceAges:
    """How many documents of one data source fall in each age bucket."""

    source: str
    counts: tuple[int, ...]

    @property
    def total(self) -> int:
        """Documents of this source."""
        return sum(self.counts)


def age_buckets(summaries: Iterable[Summary], now: float) -> list[SourceAges]:
    """Documents per data source and age bucket (age = time since the copy was fetched)."""
    table: dict[str, list[int]] = {}
    for summary in summaries:
        source = summary.data_source or data_source_of(summary.name) or "(unknown)"
        row = table.setdefault(source, [0] * len(AGE_BUCKETS))
        age = max(0.0, now - summary.fetched_at)
        index = next(i for i, (_, limit) in enumerate(AGE_BUCKETS) if age < limit)
        row[index] += 1
    return [SourceAges(src, tuple(row)) for src, row in sorted(table.items())]


@dataclass(frozen=True, slots=True)
class Segment:
    """One coloured part of a bar in the status chart."""

    x: float
    width: float
    bucket: int
    count: int
    label: str


@dataclass(frozen=True, slots=True)
class Bar:
    """One data source's row in the status chart."""

    y: float
    source: str
    total: int
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class Chart:
    """Geometry of the stacked-bar chart; the template only draws it."""

    width: int
    height: int
    label_width: int
    bar_width: int
    row_height: int
    bars: list[Bar]
    legend: list[tuple[float, int, str]]
    legend_y: float


def age_chart(rows: Sequence[SourceAges], *, width: int = 760) -> Chart:
    """Stacked bars, one per data source, each scaled to 100% of that source's documents."""
    label_width, count_width, row_height = 230, 90, 34
    bar_width = width - label_width - count_width
    bars = []
    for i, row in enumerate(rows):
        x, segments = float(label_width), []
        for bucket, count in enumerate(row.counts):
            if not count:
                continue
            seg_width = bar_width * count / row.total
            segments.append(Segment(x, seg_width, bucket, count, AGE_BUCKETS[bucket][0]))
            x += seg_width
        bars.append(Bar(i * row_height + 8, row.source, row.total, segments))
    legend_y = len(rows) * row_height + 20
    legend = [(label_width + i * 100.0, i, label) for i, (label, _) in enumerate(AGE_BUCKETS)]
    return Chart(
        width, int(legend_y + 24), label_width, bar_width, row_height, bars, legend, legend_y
    )
