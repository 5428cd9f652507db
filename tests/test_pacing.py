"""Client-side pacing under the per-minute quota: the pure rule, then the Pacer around it."""

from __future__ import annotations

import pytest

from mirror.upstream.pacing import Pacer, delay_needed
from tests.fakes import FakeTime


@pytest.mark.parametrize(
    ("history", "now", "limit", "window", "expected"),
    [
        # Room left in the window: go now.
        ([], 0.0, 1, 60.0, 0.0),
        ([0.0, 1.0], 2.0, 3, 60.0, 0.0),
        # Full: wait until the oldest start leaves the window.
        ([0.0, 1.0, 2.0], 2.0, 3, 60.0, 58.0),
        ([0.0], 30.0, 1, 60.0, 30.0),
        # A start exactly one window ago no longer counts.
        ([0.0], 60.0, 1, 60.0, 0.0),
        # Old starts are ignored, whatever their number.
        ([0.0, 1.0, 2.0, 3.0], 100.0, 2, 60.0, 0.0),
        # Only the limit-th most recent start matters, and order of history does not.
        ([50.0, 10.0, 40.0, 30.0], 55.0, 2, 60.0, 45.0),
        # A reserved (future) start counts too.
        ([100.0], 50.0, 1, 60.0, 110.0),
        # Short windows work the same way.
        ([0.0, 0.5], 0.6, 2, 1.0, 0.4),
    ],
)
def test_delay_needed(
    history: list[float], now: float, limit: int, window: float, expected: float
) -> None:
    assert delay_needed(history, now, limit, window) == pytest.approx(expected)


def test_delay_needed_rejects_a_zero_limit() -> None:
    with pytest.raises(ValueError):
        delay_needed([], 0.0, 0, 60.0)


def test_pacer_spaces_requests_to_the_limit() -> None:
    t = FakeTime(1000.0)
    pacer = Pacer(3, window=60.0, clock=t.clock, sleep=t.sleep)
    waits = [pacer.acquire() for _ in range(7)]
    assert waits == [0.0, 0.0, 0.0, 60.0, 0.0, 0.0, 60.0]
    assert t.slept == [60.0, 60.0]


def test_pacer_never_waits_when_requests_are_spread_out() -> None:
    t = FakeTime(1000.0)
    pacer = Pacer(2, window=10.0, clock=t.clock, sleep=t.sleep)
    for _ in range(10):
        assert pacer.acquire() == 0.0
        t.now += 5.0
    assert t.slept == []


def test_pacer_with_a_sleep_that_does_not_sleep_still_terminates() -> None:
    # Tests patch sleep to a no-op; the pacer must not spin waiting for the clock to move.
    pacer = Pacer(1, window=60.0, clock=lambda: 0.0, sleep=lambda _s: None)
    assert [pacer.acquire() for _ in range(3)] == [0.0, 60.0, 120.0]


def test_pacer_rejects_a_zero_limit() -> None:
    with pytest.raises(ValueError):
        Pacer(0)
