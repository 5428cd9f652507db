"""Client-side pacing: never start more than `limit` requests in any sliding `window` seconds."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence


def delay_needed(history: Sequence[float], now: float, limit: int, window: float) -> float:
    """Seconds to wait at `now` before one more request may start, given past start times."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    # Starts still inside the window; reserved future starts count too.
    recent = sorted(t for t in history if t > now - window)
    if len(recent) < limit:
        return 0.0
    # The new start must fall after the limit-th most recent one has left the window.
    return max(0.0, recent[-limit] + window - now)


class Pacer:
    """Spaces out request starts so a per-window quota is never exceeded (thread-safe)."""

    def __init__(
        self,
        limit: int,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if limit < 1:
            raise ValueError("limit must be at least 1")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._sleep = sleep
        self._starts: deque[float] = deque()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Wait until a request may start under the quota; return the seconds waited."""
        with self._lock:
            now = self._clock()
            while self._starts and self._starts[0] <= now - self.window:
                self._starts.popleft()
            delay = delay_needed(self._starts, now, self.limit, self.window)
            # Reserve the slot before sleeping, so concurrent callers queue behind it
            # instead of all waking at the same instant and bursting.
            self._starts.append(now + delay)
        if delay > 0:
            self._sleep(delay)
        return delay
