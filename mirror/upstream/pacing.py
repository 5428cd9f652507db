"""Client-side pacing: a token bucket per upstream quota (GCRA), pure rule plus an in-process pacer.

The rule is the generic cell rate algorithm: a bucket is one number, its "theoretical arrival
time" (TAT). Each call takes the next slot, at the TAT less a small burst tolerance, and moves
the TAT on by one interval. The interval is stretched so that the burst never carries a window
over the quota: with `limit` calls per `window` seconds and a burst of `b`, the interval is
(window + SLACK) / (limit - b + 1), and then any `window` seconds hold at most `limit` starts
(the (limit+1)-th start comes at least window + SLACK after the first).

A 429 halves the bucket's rate (once per burst of 429s), pushes the TAT past the server's
Retry-After, and the rate climbs back linearly over RECOVERY_WINDOWS windows. The state is a
`BucketState`, so the same rule runs on a bucket in memory (`Pacer`, one process) or on a row
in the store that every process shares (mirror/service/pacing.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..models import BucketState

# Seconds of headroom per window: a call started on time may reach upstream a little later
# than the one after it (a new connection, a busy machine), so no window may be packed tight.
SLACK = 0.5
# The default burst is this share of the per-window limit (5 calls of 100/min), at most
# MAX_BURST: enough for a small `get` or `fetch` to go at once, small enough to stay smooth.
BURST_SHARE = 20
MAX_BURST = 10
# After a 429 the rate is halved, never below this share of the quota...
MIN_FACTOR = 1 / 16
# ...and climbs back linearly: from nothing to the full rate in this many windows.
RECOVERY_WINDOWS = 2.0


class Pacing(Protocol):
    """What an upstream client needs from a quota bucket, wherever its state lives."""

    def acquire(self) -> float:
        """Wait until one more call may start under the quota; return the seconds waited."""
        ...

    def slow_down(self, retry_after: float | None) -> None:
        """Upstream answered 429: slow every later call (and wait `retry_after`, if given)."""
        ...


def default_burst(limit: int) -> int:
    """How many calls may start back to back when the bucket is empty."""
    return max(1, min(limit // BURST_SHARE, MAX_BURST))


@dataclass(frozen=True, slots=True)
class Rule:
    """A quota as its bucket enforces it: at most `limit` call starts in any `window` seconds."""

    limit: int
    window: float = 60.0
    burst: int = 0  # 0: default_burst(limit)

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError("limit must be at least 1")
        if self.window <= 0:
            raise ValueError("window must be positive")
        if self.burst == 0:
            object.__setattr__(self, "burst", default_burst(self.limit))
        if not 1 <= self.burst <= self.limit:
            raise ValueError(f"burst must be between 1 and the limit ({self.limit})")

    @classmethod
    def per_minute(cls, calls: int, window: float = 60.0) -> Rule:
        """The rule for a quota of `calls` per minute, counted over `window`-second windows."""
        if calls < 1:
            raise ValueError("limit must be at least 1")
        # A shorter window allows its share of the minute's calls (rounded down, at least one).
        return cls(max(1, math.floor(calls * window / 60.0 + 1e-9)), window)

    @property
    def interval(self) -> float:
        """Seconds between call starts at the full rate, once the burst is spent."""
        return (self.window + SLACK) / (self.limit - self.burst + 1)

    @property
    def tolerance(self) -> float:
        """How far ahead of the TAT a call may start: the burst, in seconds."""
        return (self.burst - 1) * self.interval


def factor_at(state: BucketState, rule: Rule, now: float) -> float:
    """The share of the full rate in force at `now`: lowered by 429s, recovering since."""
    if state.factor >= 1.0:
        return 1.0
    climbed = max(0.0, now - state.slowed_at) / (RECOVERY_WINDOWS * rule.window)
    return min(1.0, state.factor + climbed)


def reserve(state: BucketState | None, rule: Rule, now: float) -> tuple[BucketState, float]:
    """Take the next call slot at `now`: the bucket's new state and when the call may start."""
    if state is None:
        state = BucketState(tat=now)
    factor = factor_at(state, rule, now)
    interval = rule.interval / factor
    # No burst while slowed down: after a 429 calls go one interval apart.
    tolerance = rule.tolerance if factor >= 1.0 else 0.0
    # A TAT far ahead is a long queue of reserved calls (or a clock that stepped back):
    # either way it is honoured, since pulling it in would let calls overlap.
    tat = state.tat
    start = max(now, tat - tolerance)
    return BucketState(max(tat, start) + interval, state.factor, state.slowed_at), start


def slow_down(
    state: BucketState | None, rule: Rule, now: float, retry_after: float | None
) -> BucketState:
    """The bucket after a 429 at `now`: rate halved, and no call before Retry-After is over."""
    if state is None:
        state = BucketState(tat=now)
    current = factor_at(state, rule, now)
    factor, slowed_at = state.factor, state.slowed_at
    # Calls already in flight meet the same exhausted quota: the 429s of one burst (within
    # the server's wait, or one slowed interval) halve the rate once, not once each.
    hold = max(retry_after or 0.0, rule.interval / current)
    if current >= 1.0 or now - state.slowed_at >= hold:
        factor, slowed_at = max(MIN_FACTOR, current / 2.0), now
    pause = retry_after if retry_after is not None else rule.interval / factor
    tat = max(state.tat, now + pause)
    return BucketState(tat, factor, slowed_at)


class Pacer:
    """A bucket in this process's memory (thread-safe): paces the calls of this process only."""

    def __init__(
        self,
        limit: int,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        *,
        burst: int = 0,
    ) -> None:
        self.rule = Rule(limit, window, burst)
        self._clock = clock
        self._sleep = sleep
        self._state: BucketState | None = None
        self._lock = threading.Lock()

    @classmethod
    def for_rule(
        cls,
        rule: Rule,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Pacer:
        """A pacer that enforces `rule`."""
        return cls(rule.limit, rule.window, clock, sleep, burst=rule.burst)

    def acquire(self) -> float:
        """Wait until a call may start under the quota; return the seconds waited."""
        with self._lock:
            now = self._clock()
            # The slot is reserved before sleeping, so concurrent callers queue behind it
            # instead of all waking at the same instant and bursting.
            self._state, start = reserve(self._state, self.rule, now)
        delay = start - now
        if delay > 0:
            self._sleep(delay)
        return delay

    def slow_down(self, retry_after: float | None) -> None:
        """Upstream answered 429: halve the rate for a while and respect Retry-After."""
        with self._lock:
            self._state = slow_down(self._state, self.rule, self._clock(), retry_after)
