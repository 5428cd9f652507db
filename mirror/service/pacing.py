"""Quota buckets shared through the store: every dk-mirror process on one store paces together.

Two CI jobs, or `dk-mirror serve --allow-fetch` and a fetch on one machine, draw on one
upstream quota. Each keeps its bucket (mirror/upstream/pacing.py: the rule) in a row of the
store, reserves its next call slot in one short write transaction, and sleeps outside it. A
store that cannot be written (read-only) paces in this process only, and says so.

Times in the row are Unix time, the one clock processes share; on a PostgreSQL store used
from several machines their clocks must agree (NTP) to within a fraction of the slack.

A quota so large that its slots come microseconds apart (pacing lifted, as a bench or a
private upstream does) would still cost a write transaction per call, each one waiting for
the write lock behind a crawl's commits. There a reservation takes a short lease: the next
few slots that start within LEASE_SPAN, handed to this process's next calls. The slots are
counted in the shared row like any other, so sharing is exact; a lease is used within
LEASE_TTL (well inside the rule's SLACK) or dropped, which only wastes a few microseconds of
quota. At real quotas (100/min: 0.6 s apart) a lease is one slot, as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..config import Settings
from ..errors import StoreError
from ..models import BucketState
from ..upstream.factory import in_process_pacer, quota_rule
from ..upstream.pacing import SLACK, Pacer, Pacing, Rule, reserve, slow_down
from ..upstream.retry import RetryPolicy

if TYPE_CHECKING:
    from ..store.api import StoreAccess

log = logging.getLogger("mirror.service")

BUCKETS = ("get", "search")
# A lease holds only as many slots as the full rate gives in this span (seconds), and only
# those that start within it...
LEASE_SPAN = 0.005
# ...at most this many of them...
LEASE_MAX = 32
# ...and a leased slot not used this long after its start is dropped, not used late. A start
# up to SLACK late still keeps every window within the limit (the interval is stretched by
# SLACK); half of it leaves room for the clock. A crawl's calls come one per fetch worker
# every latency: at 50 ms a 50 ms lease had lapsed by the next call, so nearly every call
# paid a write transaction, queued behind the crawl's own group commits.
LEASE_TTL = SLACK / 2


class SharedPacer:
    """A quota bucket kept in the store: the calls of every process on it are paced together."""

    def __init__(
        self,
        store: StoreAccess,
        upstream: str,
        bucket: str,
        rule: Rule,
        *,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
        fallback: Pacer,
    ) -> None:
        self.rule = rule
        self._store = store
        self._key = (upstream, bucket)
        self._clock = clock
        self._sleep = sleep
        self._fallback = fallback
        self._warned = False
        # Start times of slots reserved in the shared row and not used yet (see LEASE_SPAN).
        self._leased: deque[float] = deque()
        self._lease_lock = threading.Lock()

    def acquire(self) -> float:
        """Reserve the next slot in the shared bucket, then wait for it; the seconds waited."""
        with self._lease_lock:
            now = self._clock()
            while self._leased and self._leased[0] < now - LEASE_TTL:
                self._leased.popleft()  # too old to start now: dropped, never used late
            if self._leased:
                start = self._leased.popleft()
            else:
                try:
                    starts = self._store.buckets.change(*self._key, self._lease, self._clock)
                except StoreError as exc:
                    self._fell_back(exc)
                    start = None
                else:
                    start = starts[0]
                    self._leased.extend(starts[1:])
                now = self._clock()
        if start is None:
            return self._fallback.acquire()
        delay = start - now
        # Outside the transaction: a sleeping caller holds no lock.
        if delay > 0:
            self._sleep(delay)
        return delay

    def _lease(self, state: BucketState, now: float) -> tuple[BucketState, list[float]]:
        """The next slot, and the ones after it that start within LEASE_SPAN of `now`."""
        state, start = reserve(state, self.rule, now)
        starts = [start]
        # Only slots that fit in LEASE_SPAN at the full rate: at a real quota a lease is the
        # one slot asked for, so a one-call process never takes (and wastes) the burst.
        size = min(LEASE_MAX, int(LEASE_SPAN / self.rule.interval))
        while len(starts) < size:
            after, start = reserve(state, self.rule, now)
            if start > now + LEASE_SPAN:
                break
            state = after
            starts.append(start)
        return state, starts

    def slow_down(self, retry_after: float | None) -> None:
        """Upstream answered 429: slow the shared bucket, so every process slows down."""
        self._fallback.slow_down(retry_after)  # kept in step, in case the store fails later
        with self._lease_lock:
            self._leased.clear()  # slots leased at the old pace are not used

        def step(state: BucketState, now: float) -> tuple[BucketState, None]:
            return slow_down(state, self.rule, now, retry_after), None

        try:
            self._store.buckets.change(*self._key, step, self._clock)
        except StoreError as exc:
            self._fell_back(exc)

    def _fell_back(self, exc: StoreError) -> None:
        if not self._warned:
            self._warned = True
            log.warning(
                "cannot keep the %s quota bucket in the store (%s); pacing this process's "
                "calls only, so other dk-mirror processes on this store are not counted",
                self._key[1],
                exc.message,
            )


def pacers(
    store: StoreAccess, settings: Settings, retry: RetryPolicy | None = None
) -> dict[str, Pacing]:
    """The quota buckets for an upstream client: shared through `store` when it is writable
    (they sleep with the `retry` policy's sleep, so a test that patches waits never sleeps)."""
    policy = retry or RetryPolicy()
    local = {bucket: in_process_pacer(settings, bucket, policy) for bucket in BUCKETS}
    if store.readonly:
        log.info(
            "the store is read-only: upstream calls are paced within this process only "
            "(other dk-mirror processes on this store are not counted)"
        )
        return dict(local)
    # The bucket is shared between processes, so its times must be ones they share: wall
    # time. A test's fake clock is kept, so its waits stay decisions rather than sleeps.
    clock = time.time if policy.clock is time.monotonic else policy.clock
    return {
        bucket: SharedPacer(
            store,
            settings.upstream,
            bucket,
            quota_rule(settings, bucket),
            clock=clock,
            sleep=policy.sleep,
            fallback=local[bucket],
        )
        for bucket in BUCKETS
    }
