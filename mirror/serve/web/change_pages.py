"""The browser's pages about change: a document's history with diffs between kept versions,
the changes timeline, and the freshness part of the status page.

Plain functions over `Mirror` returning responses; routes.py wires them and turns a
MirrorError into the error page, as for every other page.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from starlette.responses import HTMLResponse

from ... import names as naming
from ...changes.events import CLASSES, KINDS, ChangeFilter
from ...changes.feed import diff_path
from ...errors import InvalidInput
from ...models import Summary, Version
from . import diff_view, freshness, timeline
from .pages import page
from .views import DAY

if TYPE_CHECKING:
    from ...service import Mirror

# The timeline reads at most this many events (newest first) and lists the newest LISTED.
MAX_EVENTS = 10_000
LISTED = 200
DEFAULT_DAYS = 30
MAX_DAYS = 366


def history_page(
    mirror: Mirror, versions: list[Version], old: str | None, new: str | None
) -> HTMLResponse:
    """A document's kept `versions` and the diff from `old` to `new` (default: the version
    before the current one, to the current one)."""
    name = versions[0].name
    diff = None
    if old or new or len(versions) > 1:
        diff = mirror.diff_versions(name, old=old, new=new)
    numbers = [v.number for v in versions]
    return page(
        "history.html",
        name=name,
        versions=versions,
        previous={n: numbers[i + 1] for i, n in enumerate(numbers[:-1])},
        diff=diff,
        table=diff_view.diff_rows(diff.text) if diff else None,
        now=mirror.clock(),
        section="changes",
    )


def _prefix(raw: str) -> str | None:
    """A prefix in any accepted name form, as the change log stores names (`documents/...`)."""
    text = raw.strip()
    if not text:
        return None
    kept_slash = text.endswith("/")
    canonical = naming.normalize(text.rstrip("/"))
    return canonical + "/" if kept_slash else canonical


def _days(raw: str | None) -> int:
    if raw is None or raw == "":
        return DEFAULT_DAYS
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_DAYS:
        raise InvalidInput(
            f"days={raw[:20]!r} is not a number of days", hint=f"give 1 to {MAX_DAYS}"
        )
    return int(raw)


def changes_page(mirror: Mirror, prefix: str, kind: str, days_text: str | None) -> HTMLResponse:
    """The changes of the last `days` (under `prefix`, of `kind`) as a timeline per section,
    then listed newest first, each opening its diff."""
    days = _days(days_text)
    wanted_prefix = _prefix(prefix)
    now = mirror.clock()
    since = now - days * DAY
    wanted = ChangeFilter(since=since, prefix=wanted_prefix, kind=kind or None, limit=MAX_EVENTS)
    events = mirror.changes(wanted)
    chart = timeline.timeline(events, now, days)
    entries = [
        {"event": e, "url": diff_path(e), "short": timeline.short(e.name),
         "section": timeline.section_of(e.name)}
        for e in events[:LISTED]
    ]  # fmt: skip
    return page(
        "changes.html",
        chart=chart,
        entries=entries,
        shown=len(events),
        capped=len(events) >= MAX_EVENTS,
        listed=LISTED,
        days=days,
        prefix=timeline.short(wanted_prefix or ""),
        kind=kind,
        kinds=KINDS + CLASSES,
        now=now,
        section="changes",
    )


def freshness_context(mirror: Mirror, summaries: Sequence[Summary], now: float) -> dict[str, Any]:
    """What the status page's freshness chart needs: per source ages, the refresh age, and
    whether that age is the configured max age or the default."""
    configured = mirror.settings.max_age
    after = configured or freshness.DEFAULT_REFRESH_AFTER
    items = freshness.freshness(summaries, now, after)
    return {
        "fresh": items,
        "fresh_chart": freshness.freshness_chart(items, after),
        "refresh_after": freshness.duration_label(after),
        "refresh_configured": configured is not None,
        "due_total": sum(i.due for i in items),
    }
