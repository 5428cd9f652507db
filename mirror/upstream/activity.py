"""What an upstream client has been doing, for progress displays: retries and quota waits."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ActivitySnapshot:
    """Counts since the client was made: calls started, retries, seconds paced for quota."""

    attempts: int = 0
    retries: int = 0
    quota_wait: float = 0.0


class Activity:
    """Thread-safe counters the client bumps on every attempt (workers share one client)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts = 0
        self._retries = 0
        self._waited = 0.0

    def attempt(self, *, retry: bool, waited: float) -> None:
        """Count one attempt (`retry`: not the call's first) after `waited` s of pacing."""
        with self._lock:
            self._attempts += 1
            self._retries += retry
            self._waited += waited

    def snapshot(self) -> ActivitySnapshot:
        """The counts now."""
        with self._lock:
            return ActivitySnapshot(self._attempts, self._retries, self._waited)
