"""What talking to upstream has cost so far: calls, retries, 429s and time spent waiting.

A progress display reads `upstream.stats` (an `UpstreamStats` snapshot) every so often to
show "waiting for quota" and the retry count; the client keeps the counts in a `CallStats`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, slots=True)
class UpstreamStats:
    """Counts since the client was opened (one snapshot; read `upstream.stats` again for more)."""

    calls: int = 0  # attempts sent upstream, retries included
    retries: int = 0  # attempts that repeated a failed one
    throttled: int = 0  # 429 RESOURCE_EXHAUSTED answers
    quota_wait_seconds: float = 0.0  # waiting for the quota: pacing, and Retry-After after a 429
    backoff_seconds: float = 0.0  # waiting before retrying any other failure
    waiting_for_quota: int = 0  # calls waiting for the quota right now (pacing or Retry-After)
    # Wall time during which at least one call waited for the quota: with 4 workers queued
    # at once, quota_wait_seconds counts each of them, this counts the clock once.
    quota_wait_wall_seconds: float = 0.0
    not_found: int = 0  # calls answered 404: spent on names upstream does not have

    def to_json(self) -> dict[str, Any]:
        """As a progress line or a `--json` summary reports it."""
        return {
            "calls": self.calls,
            "retries": self.retries,
            "throttled": self.throttled,
            "quotaWaitSeconds": round(self.quota_wait_seconds, 3),
            "backoffSeconds": round(self.backoff_seconds, 3),
            "waitingForQuota": self.waiting_for_quota,
            "quotaWaitWallSeconds": round(self.quota_wait_wall_seconds, 3),
            "notFound": self.not_found,
        }


class CallStats:
    """The running counts behind `UpstreamStats`, safe to update from many threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._now = UpstreamStats()
        self._lock = threading.Lock()
        self._clock = clock
        self._waiting_since: float | None = None  # when the count of waiting calls left 0

    def snapshot(self) -> UpstreamStats:
        """The counts as they stand (a wait under way counted up to now)."""
        with self._lock:
            now = self._now
            if self._waiting_since is None:
                return now
            ongoing = self._clock() - self._waiting_since
            return replace(now, quota_wait_wall_seconds=now.quota_wait_wall_seconds + ongoing)

    def not_found(self) -> None:
        """A call was answered 404 (a name upstream does not have)."""
        with self._lock:
            self._now = replace(self._now, not_found=self._now.not_found + 1)

    def called(self, paced_seconds: float) -> None:
        """One attempt is about to be sent, after waiting `paced_seconds` for its quota slot."""
        with self._lock:
            now = self._now
            self._now = replace(
                now, calls=now.calls + 1, quota_wait_seconds=now.quota_wait_seconds + paced_seconds
            )

    def waiting(self, change: int) -> None:
        """`change` calls began (+) or stopped (-) waiting for the quota."""
        with self._lock:
            now = self._now
            count = now.waiting_for_quota + change
            wall = now.quota_wait_wall_seconds
            if count > 0 and self._waiting_since is None:
                self._waiting_since = self._clock()
            elif count <= 0 and self._waiting_since is not None:
                wall += self._clock() - self._waiting_since
                self._waiting_since = None
            self._now = replace(now, waiting_for_quota=count, quota_wait_wall_seconds=wall)

    def throttled(self) -> None:
        """Upstream answered 429."""
        with self._lock:
            self._now = replace(self._now, throttled=self._now.throttled + 1)

    def retrying(self, seconds: float, *, for_quota: bool) -> None:
        """A failed attempt will be repeated after `seconds` (`for_quota`: it was a 429)."""
        with self._lock:
            now = self._now
            if for_quota:
                self._now = replace(
                    now,
                    retries=now.retries + 1,
                    quota_wait_seconds=now.quota_wait_seconds + seconds,
                )
            else:
                self._now = replace(
                    now, retries=now.retries + 1, backoff_seconds=now.backoff_seconds + seconds
                )
