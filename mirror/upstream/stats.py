"""What talking to upstream has cost so far: calls, retries, 429s and time spent waiting.

A progress display reads `upstream.stats` (an `UpstreamStats` snapshot) every so often to
show "waiting for quota" and the retry count; the client keeps the counts in a `CallStats`.
"""

from __future__ import annotations

import threading
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

    def to_json(self) -> dict[str, Any]:
        """As a progress line or a `--json` summary reports it."""
        return {
            "calls": self.calls,
            "retries": self.retries,
            "throttled": self.throttled,
            "quotaWaitSeconds": round(self.quota_wait_seconds, 3),
            "backoffSeconds": round(self.backoff_seconds, 3),
            "waitingForQuota": self.waiting_for_quota,
        }


class CallStats:
    """The running counts behind `UpstreamStats`, safe to update from many threads."""

    def __init__(self) -> None:
        self._now = UpstreamStats()
        self._lock = threading.Lock()

    def snapshot(self) -> UpstreamStats:
        """The counts as they stand."""
        return self._now

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
            self._now = replace(self._now, waiting_for_quota=self._now.waiting_for_quota + change)

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
