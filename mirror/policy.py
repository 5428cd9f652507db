"""Caching decisions as pure plans: verdicts + mode -> what to do. No I/O; the clock is passed in.

The I/O code (service/documents.py) executes plans; tests/test_policy.py covers every row.

    verdict \\ mode     offline            online (may fetch)
    FRESH              serve cached       serve cached
    STALE              serve stale (warn) fetch; on a transient failure serve stale (warn)
    MISSING            not cached         fetch; on any failure raise

`Mode` is built in one place per shell (cli/common.py from options, serve/options.py from the
serve mode) and passed down whole; use cases never take loose offline/refresh flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from .models import CachedDocument
from .timestamps import instant_key


class Freshness(StrEnum):
    """What the cache holds for one name."""

    FRESH = "fresh"  # serve it
    STALE = "stale"  # refetch; serve only if upstream fails (stale-if-error) or offline
    MISSING = "missing"  # no content cached: must fetch


class Action(StrEnum):
    """What to do for one requested name."""

    SERVE_CACHED = "serve-cached"
    FETCH = "fetch"
    SERVE_STALE = "serve-stale"  # offline with an old copy: serve it, with a warning
    NOT_CACHED = "not-cached"  # offline with no copy: a NotCached error


class OnFailure(StrEnum):
    """What an upstream failure during a fetch means for the request."""

    SERVE_STALE = "serve-stale"  # stale-if-error: every name has an older copy
    RAISE = "raise"


@dataclass(frozen=True, slots=True)
class Mode:
    """How a request may use the cache and the network, decided by the shell once.

    offline: never contact upstream. max_age: seconds after which a copy is stale (None:
    never). refresh: every cached copy counts as stale. prefer_recorded: online, a recorded
    search page or answer is replayed instead of asking upstream again (saves quota).
    """

    offline: bool = False
    max_age: float | None = None
    refresh: bool = False
    prefer_recorded: bool = False


@dataclass(frozen=True, slots=True)
class Plan:
    """The action for each requested name (in request order, duplicates kept once)."""

    actions: Mapping[str, Action] = field(default_factory=dict)

    def names(self, *wanted: Action) -> list[str]:
        """The names whose action is one of `wanted`, in request order."""
        return [name for name, action in self.actions.items() if action in wanted]

    @property
    def to_fetch(self) -> list[str]:
        """Names to ask upstream for."""
        return self.names(Action.FETCH)


def newer(candidate: str | None, than: str | None) -> bool:
    """True when RFC 3339 time `candidate` is later than `than` (unknown never counts as newer)."""
    if not candidate or not than:
        return False
    a, b = instant_key(candidate), instant_key(than)
    return a is not None and b is not None and a > b


def keeps_stored(stored: CachedDocument | None, incoming_update_time: str | None) -> bool:
    """Whether an imported copy must leave the stored one alone: the stored copy has content
    and an `updateTime`, and the incoming one has none or an older one. (A copy without
    `updateTime` never replaces one that has it; equal times replace, as a re-import should.)"""
    if stored is None or stored.document.content is None or not stored.document.update_time:
        return False
    return not incoming_update_time or newer(stored.document.update_time, incoming_update_time)


def refetch_needed(
    stored_update_time: str | None,
    stored_length: int | None,
    upstream_update_time: str | None,
    upstream_length: int | None,
) -> bool:
    """Refresh: whether upstream's metadata (BASIC view) says the stored content may be out of
    date. Same `updateTime` instant and no differing `contentLengthBytes`: unchanged. Any other
    time (newer, older, or one side without a time to compare) or another length: refetch."""
    stored, now = instant_key(stored_update_time or ""), instant_key(upstream_update_time or "")
    if stored is None or now is None or stored != now:
        return True
    return None not in (stored_length, upstream_length) and stored_length != upstream_length


def freshness(
    cached: CachedDocument | None, *, now: float, max_age: float | None, refresh: bool = False
) -> Freshness:
    """Judge one cached copy: missing, stale (too old, refresh asked, newer upstream), or fresh."""
    if cached is None or cached.document.content is None:
        return Freshness.MISSING
    if refresh:
        return Freshness.STALE
    if newer(cached.seen_update_time, cached.document.update_time):
        return Freshness.STALE
    if max_age is not None and now - cached.fetched_at > max_age:
        return Freshness.STALE
    return Freshness.FRESH


def action_for(verdict: Freshness, mode: Mode) -> Action:
    """One row of the table in the module docstring."""
    if verdict is Freshness.FRESH:
        return Action.SERVE_CACHED
    if not mode.offline:
        return Action.FETCH
    return Action.SERVE_STALE if verdict is Freshness.STALE else Action.NOT_CACHED


def plan(
    wanted: Sequence[str],
    cached: Mapping[str, CachedDocument],
    mode: Mode,
    *,
    now: float,
) -> Plan:
    """The plan for `wanted` given what the cache holds and the mode."""
    actions: dict[str, Action] = {}
    for name in wanted:
        if name not in actions:
            verdict = freshness(
                cached.get(name), now=now, max_age=mode.max_age, refresh=mode.refresh
            )
            actions[name] = action_for(verdict, mode)
    return Plan(actions)


def on_failure(
    fetching: Sequence[str], cached: Mapping[str, CachedDocument], *, not_found: bool
) -> OnFailure:
    """stale-if-error: serve older copies only when every name being fetched has one and the
    failure is not upstream saying the document is gone (a 404 is an answer, not an outage)."""
    if not_found:
        return OnFailure.RAISE
    has_copy = all(
        name in cached and cached[name].document.content is not None for name in fetching
    )
    return OnFailure.SERVE_STALE if fetching and has_copy else OnFailure.RAISE
