"""Client-side pacing under the per-minute quotas: the bucket rule (a fake clock), the Pacer
around it, and what a client reports about its waits and retries."""

from __future__ import annotations

import random

import pytest

from mirror.config import ENV_QUOTA_WINDOW, Settings
from mirror.errors import ConfigError
from mirror.models import BucketState
from mirror.upstream import open_upstream
from mirror.upstream.factory import quota_rule
from mirror.upstream.pacing import (
    MIN_FACTOR,
    SLACK,
    Pacer,
    Rule,
    factor_at,
    reserve,
    slow_down,
)
from mirror.upstream.retry import RetryPolicy
from tests.emulator import Emulator, Fault
from tests.fakes import FakeTime

# 10 calls per 9.5 s with a burst of 3: interval (9.5 + 0.5) / 8 = 1.25 s, tolerance 2.5 s.
R = Rule(10, 9.5, burst=3)


def most_in_any_window(starts: list[float], window: float) -> int:
    """The most starts any half-open window [t, t + window) holds."""
    ordered = sorted(starts)
    most, first = 0, 0
    for last, t in enumerate(ordered):
        while ordered[first] <= t - window:
            first += 1
        most = max(most, last - first + 1)
    return most


# -- the rule ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("per_minute", "window", "limit", "burst", "interval"),
    [
        (100, 60.0, 100, 5, 60.5 / 96),  # the documented quota: ~95 calls/min sustained
        (2, 60.0, 2, 1, 30.25),  # too small for a burst
        (150, 4.0, 10, 1, 0.45),  # a short window allows its share of the minute's calls
        (30, 1.0, 1, 1, 1.5),  # less than one call per window rounds up to one
        (1_000_000, 60.0, 1_000_000, 10, 60.5 / 999_991),  # the burst is capped
    ],
)
def test_rule_per_minute(
    per_minute: int, window: float, limit: int, burst: int, interval: float
) -> None:
    rule = Rule.per_minute(per_minute, window)
    assert (rule.limit, rule.window, rule.burst) == (limit, window, burst)
    assert rule.interval == pytest.approx(interval)
    assert rule.tolerance == pytest.approx((burst - 1) * interval)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Rule(0),
        lambda: Rule(5, 0.0),
        lambda: Rule(5, burst=6),
        lambda: Rule.per_minute(0),
        lambda: Pacer(0),
    ],
)
def test_impossible_rules_are_refused(make: object) -> None:
    with pytest.raises(ValueError):
        make()  # type: ignore[operator]


@pytest.mark.parametrize(
    ("state", "now", "start", "tat"),
    [
        # An unused bucket: go now; the TAT moves one interval past now.
        (None, 100.0, 100.0, 101.25),
        # The burst: three calls start at once...
        (BucketState(101.25), 100.0, 100.0, 102.5),
        (BucketState(102.5), 100.0, 100.0, 103.75),
        # ...the fourth waits one interval, the fifth two.
        (BucketState(103.75), 100.0, 101.25, 105.0),
        (BucketState(105.0), 100.0, 102.5, 106.25),
        # A bucket idle for long is empty again, whatever its TAT was.
        (BucketState(50.0), 100.0, 100.0, 101.25),
        # Slowed to half after a 429: twice the interval, and no burst.
        (BucketState(100.0, 0.5, 100.0), 100.0, 100.0, 102.5),
        (BucketState(102.5, 0.5, 100.0), 100.0, 102.5, 105.0),
        # Recovering linearly: a quarter of two windows later, at 0.75 of the rate.
        (BucketState(104.75, 0.5, 100.0), 104.75, 104.75, 104.75 + 1.25 / 0.75),
        # Fully recovered after one window from half: the burst is back.
        (BucketState(111.0, 0.5, 100.0), 109.5, 109.5, 112.25),
        # A TAT far ahead (a long queue of reservations) is honoured.
        (BucketState(5000.0), 100.0, 5000.0 - 2.5, 5001.25),
    ],
)
def test_reserve(state: BucketState | None, now: float, start: float, tat: float) -> None:
    new, got = reserve(state, R, now)
    assert got == pytest.approx(start)
    assert new.tat == pytest.approx(tat)
    if state is not None:  # reserving never changes the rate
        assert (new.factor, new.slowed_at) == (state.factor, state.slowed_at)


@pytest.mark.parametrize(
    ("state", "now", "retry_after", "factor", "slowed_at", "tat"),
    [
        # A first 429: half the rate, and nothing starts before Retry-After is over.
        (None, 100.0, 5.0, 0.5, 100.0, 105.0),
        (BucketState(101.25), 100.0, 5.0, 0.5, 100.0, 105.0),
        # Without Retry-After: one slowed interval.
        (BucketState(90.0), 100.0, None, 0.5, 100.0, 102.5),
        # A TAT already later stays.
        (BucketState(110.0), 100.0, 5.0, 0.5, 100.0, 110.0),
        # Another 429 of the same burst (within Retry-After): no second halving.
        (BucketState(105.0, 0.5, 100.0), 101.0, 5.0, 0.5, 100.0, 106.0),
        # A 429 after the hold, while recovering at 0.75: halve from there.
        (BucketState(105.0, 0.5, 100.0), 104.75, None, 0.375, 104.75, 104.75 + 1.25 / 0.375),
    ],
)
def test_slow_down(
    state: BucketState | None,
    now: float,
    retry_after: float | None,
    factor: float,
    slowed_at: float,
    tat: float,
) -> None:
    new = slow_down(state, R, now, retry_after)
    assert new.factor == pytest.approx(factor)
    assert new.slowed_at == pytest.approx(slowed_at)
    assert new.tat == pytest.approx(tat)
    _, start = reserve(new, R, now)
    assert start >= now + (retry_after or 0.0)  # Retry-After is honoured by the next call


@pytest.mark.parametrize(
    ("state", "now", "factor"),
    [
        (BucketState(0.0), 5.0, 1.0),
        (BucketState(0.0, 0.5, 10.0), 10.0, 0.5),
        (BucketState(0.0, 0.5, 10.0), 14.75, 0.75),
        (BucketState(0.0, 0.5, 10.0), 1000.0, 1.0),
        (BucketState(0.0, 0.5, 10.0), 5.0, 0.5),  # a clock behind slowed_at: no climb
    ],
)
def test_factor_recovers_linearly(state: BucketState, now: float, factor: float) -> None:
    assert factor_at(state, R, now) == pytest.approx(factor)


@pytest.mark.parametrize("rule", [R, Rule.per_minute(100), Rule(7, 3.0), Rule(50, 10.0, 50)])
@pytest.mark.parametrize("seed", range(4))
def test_no_window_ever_holds_more_than_the_limit(rule: Rule, seed: int) -> None:
    # Many callers on one bucket, arriving at random (bursts and lulls), with 429s now and
    # then: whatever happens, no window holds more than the limit, with SLACK to spare.
    rng = random.Random(seed)
    state: BucketState | None = None
    now, starts = 0.0, []
    for _ in range(600):
        now += rng.choice([0.0, 0.0, 0.01, rule.interval / 3, rule.interval, 3 * rule.window])
        if rng.random() < 0.03:
            state = slow_down(state, rule, now, rng.choice([None, 0.5, 2.0]))
            assert state.factor >= MIN_FACTOR
        state, start = reserve(state, rule, now)
        assert start >= now
        starts.append(start)
    # The (limit+1)-th start of any stretch comes at least window + SLACK after the first
    # (less a rounding error in the last bits, hence the microsecond).
    assert most_in_any_window(starts, rule.window + SLACK - 1e-6) <= rule.limit


def test_a_saturated_bucket_sustains_nearly_the_quota() -> None:
    rule = Rule.per_minute(100)
    state, starts = None, []
    for _ in range(1000):  # everyone asks at once; the bucket spaces them
        state, start = reserve(state, rule, 0.0)
        starts.append(start)
    per_minute = (len(starts) - rule.burst) / (starts[-1] / 60.0)
    assert 0.95 * 100 <= per_minute <= 100
    # At most the quota in any window, with half a second to spare: the 101st call of any
    # stretch starts 60.5 s after the first, so the bound is tight.
    assert most_in_any_window(starts, 60.5 - 1e-6) == 100
    assert most_in_any_window(starts, 60.5 + 1e-6) == 101


def test_two_private_buckets_together_exceed_the_quota_one_shared_does_not() -> None:
    # Why the bucket lives in the store: two processes pacing alone each use the whole quota.
    rule = Rule.per_minute(100)
    private: list[BucketState | None] = [None, None]
    shared: BucketState | None = None
    alone, together = [], []
    for i in range(400):
        now = i * 0.1
        private[i % 2], start = reserve(private[i % 2], rule, now)
        alone.append(start)
        shared, start = reserve(shared, rule, now)
        together.append(start)
    assert most_in_any_window(alone, 60.0) > 100
    assert most_in_any_window(together, 60.0) <= 100


# -- the in-process Pacer -----------------------------------------------------------------------


def test_pacer_spaces_requests_after_the_burst() -> None:
    t = FakeTime(1000.0)
    pacer = Pacer(10, window=9.5, clock=t.clock, sleep=t.sleep, burst=3)
    waits = [pacer.acquire() for _ in range(6)]
    assert waits == pytest.approx([0.0, 0.0, 0.0, 1.25, 1.25, 1.25])
    assert t.slept == pytest.approx([1.25, 1.25, 1.25])


def test_pacer_never_waits_when_requests_are_spread_out() -> None:
    t = FakeTime(1000.0)
    pacer = Pacer(2, window=10.0, clock=t.clock, sleep=t.sleep)
    for _ in range(10):
        assert pacer.acquire() == 0.0
        t.now += 5.25  # one interval: (10 + 0.5) / 2
    assert t.slept == []


def test_pacer_with_a_sleep_that_does_not_sleep_still_terminates() -> None:
    # Tests patch sleep to a no-op; the pacer must not spin waiting for the clock to move.
    pacer = Pacer(1, window=59.5, clock=lambda: 0.0, sleep=lambda _s: None)
    assert [pacer.acquire() for _ in range(3)] == [0.0, 60.0, 120.0]


def test_pacer_after_a_429_waits_out_retry_after_then_goes_slower() -> None:
    t = FakeTime(0.0)
    pacer = Pacer(10, window=9.5, clock=t.clock, sleep=t.sleep, burst=3)
    pacer.acquire()
    pacer.slow_down(4.0)
    assert pacer.acquire() == pytest.approx(4.0)
    assert pacer.acquire() == pytest.approx(2.5)  # half the rate: twice the 1.25 s interval


# -- what the client reports ------------------------------------------------------------------


def test_a_client_counts_its_retries_429s_and_quota_waits(emulator: Emulator) -> None:
    t = FakeTime()
    emulator.inject(Fault("status", status=429, retry_after="3"), times=2)
    emulator.inject(Fault("status", status=503), times=1)
    settings = Settings(db_url="sqlite://", upstream=emulator.base_url, api_key="test-key")
    seen: list[int] = []  # what a progress display polling during each wait would show

    def sleep(seconds: float) -> None:
        seen.append(upstream.stats.waiting_for_quota)
        t.sleep(seconds)

    # A 503's backoff drawn as a flat 4 s, long enough for the slowed bucket to be free again.
    policy = RetryPolicy(
        jitter=0.0,
        unavailable_initial=4.0,
        unavailable_multiplier=1.0,
        random=lambda: 1.0,
        sleep=sleep,
        clock=t.clock,
    )
    upstream = open_upstream(settings, retry=policy)
    try:
        assert upstream.stats.calls == 0
        upstream.batch_get(["documents/www.tensorflow.org/README"])
        stats = upstream.stats
    finally:
        upstream.close()
    assert seen == [1, 1, 0]  # waiting for quota after each 429; not in the 503's backoff
    assert stats.waiting_for_quota == 0
    # 429, 429 (Retry-After 3 s each), 503 (backoff 4 s), then the answer;
    # each try after a 429 starts as Retry-After ends, and the slowed bucket is free by then.
    assert t.slept == [3.0, 3.0, 4.0]
    assert (stats.calls, stats.retries, stats.throttled) == (4, 3, 2)
    assert stats.quota_wait_seconds == pytest.approx(6.0)
    assert stats.backoff_seconds == pytest.approx(4.0)
    assert stats.to_json()["throttled"] == 2


def test_waiting_for_the_quota_does_not_use_up_the_retry_deadline(emulator: Emulator) -> None:
    # At 1 call/min every call waits 60.5 s for its slot, past the 60 s retry deadline: the
    # deadline is for upstream failing, so a call that waited its turn still gets its tries.
    t = FakeTime()
    settings = Settings(
        db_url="sqlite://", upstream=emulator.base_url, api_key="test-key", get_per_minute=1
    )
    seen: list[int] = []

    def sleep(seconds: float) -> None:
        seen.append(upstream.stats.waiting_for_quota)
        t.sleep(seconds)

    policy = RetryPolicy(jitter=0.0, random=lambda: 1.0, sleep=sleep, clock=t.clock)
    upstream = open_upstream(settings, retry=policy)
    name = "documents/www.tensorflow.org/README"
    try:
        upstream.batch_get([name])
        emulator.inject(Fault("status", status=503), times=1)
        assert [d.name for d in upstream.batch_get([name])] == [name]
        stats = upstream.stats
    finally:
        upstream.close()
    # Paced 60.5 s, a 503, backoff 1 s (the first 5xx wait, drawn at its top), paced again (the slot after), then the answer.
    assert t.slept == pytest.approx([60.5, 1.0, 59.5])
    assert seen == [1, 0, 1] and stats.waiting_for_quota == 0  # "waiting for quota" when paced
    assert (stats.calls, stats.retries) == (3, 1)
    assert stats.quota_wait_seconds == pytest.approx(120.0)


# -- settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"), [(None, 60.0), ("10", 10.0), ("2s", 2.0), ("1m", 60.0)]
)
def test_the_quota_window_comes_from_the_environment(text: str | None, seconds: float) -> None:
    env = {} if text is None else {ENV_QUOTA_WINDOW: text}
    settings = Settings.resolve(env, db="x.sqlite3")
    assert settings.quota_window == seconds
    # The per-minute quotas keep their meaning; the window decides how evenly they are spent.
    assert quota_rule(settings, "get") == Rule.per_minute(100, seconds)


@pytest.mark.parametrize("text", ["0", "0.5", "soon", "-3", "2h"])
def test_an_impossible_quota_window_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=ENV_QUOTA_WINDOW):
        Settings.resolve({ENV_QUOTA_WINDOW: text}, db="x.sqlite3")


def test_each_quota_gets_its_rule() -> None:
    settings = Settings(
        db_url="sqlite://", get_per_minute=150, search_per_minute=30, quota_window=4
    )
    assert quota_rule(settings, "get") == Rule(10, 4.0)
    assert quota_rule(settings, "search") == Rule(2, 4.0)
