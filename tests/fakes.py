"""Test doubles shared by several test modules."""

from __future__ import annotations


class FakeTime:
    """A clock that moves only when the code under test sleeps: waits are real decisions,
    never real sleeps."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def clock(self) -> float:
        """The current fake time."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Record the wait and move the clock by it."""
        self.slept.append(seconds)
        self.now += seconds
