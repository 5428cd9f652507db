"""Batches in flight (service/parallel.py): a call waiting for its retry gives its slot up.

The calls go through the real retry loop (upstream/retry.py) with real, short waits.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from mirror.errors import QuotaExceeded, Unavailable, UpstreamError
from mirror.service.parallel import in_parallel
from mirror.upstream.retry import RetryPolicy, Transient, call_with_retry

pytestmark = [pytest.mark.serial]


@dataclass
class Upstream:
    """Answers each batch at once, except that `failing` batches fail their first attempt."""

    failing: dict[str, Transient]
    active: int = 0
    most_active: int = 0
    attempts: list[tuple[str, float]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def attempt(self, batch: list[str]) -> str:
        name = batch[0]
        with self.lock:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
            self.attempts.append((name, time.monotonic()))
            fault = self.failing.pop(name, None)
        try:
            time.sleep(0.02)  # long enough for calls in flight to overlap
            if fault is not None:
                raise fault
            return name
        finally:
            with self.lock:
                self.active -= 1


# 5xx waits of 0.6 s (the full-jitter draw pinned near its bound): long next to a 20 ms call.
POLICY = RetryPolicy(unavailable_initial=0.6, random=lambda: 0.999)


def fetch_all(upstream: Upstream, names: list[str], concurrency: int) -> list[str]:
    """Names in the order their batches finished."""

    def call(batch: list[str]) -> str:
        return call_with_retry(POLICY, "test", lambda _left: upstream.attempt(batch))

    done = []
    for batch, result in in_parallel([[n] for n in names], call, concurrency, "test"):
        assert result == batch[0], result
        done.append(batch[0])
    return done


def unavailable() -> Transient:
    return Transient(Unavailable("503 UNAVAILABLE"))


def test_batches_waiting_to_retry_let_the_others_finish_first() -> None:
    names = [f"b{i}" for i in range(12)]
    upstream = Upstream({"b0": unavailable(), "b1": unavailable()})
    start = time.monotonic()
    done = fetch_all(upstream, names, concurrency=2)
    # Both slots' first batches wait 0.6 s to retry; the ten others go meanwhile.
    assert done[-2:] in (["b0", "b1"], ["b1", "b0"])
    assert sorted(done) == sorted(names)
    assert upstream.most_active <= 2  # never more than the slots in flight
    assert time.monotonic() - start < 0.6 + 10 * 0.02 + 0.5
    retries = [t for name, t in upstream.attempts if name == "b0"]
    assert len(retries) == 2 and retries[1] - retries[0] >= 0.59  # the wait itself is whole


def test_a_429s_retry_after_is_still_waited_out_in_full() -> None:
    refused = Transient(QuotaExceeded("429 RESOURCE_EXHAUSTED"), retry_after=0.8)
    upstream = Upstream({"b0": refused})
    done = fetch_all(upstream, [f"b{i}" for i in range(6)], concurrency=2)
    assert done[-1] == "b0"
    tries = [t for name, t in upstream.attempts if name == "b0"]
    assert len(tries) == 2 and tries[1] - tries[0] >= 0.8
    assert upstream.most_active <= 2


def test_a_call_back_from_its_wait_goes_before_batches_not_yet_started() -> None:
    # b0 waits 0.6 s while both slots work through 20 ms batches (about 60 of them). Back from
    # its wait, it takes the next free slot ahead of the batches still queued.
    names = [f"b{i}" for i in range(200)]
    upstream = Upstream({"b0": unavailable()})
    done = fetch_all(upstream, names, concurrency=2)
    assert 3 < done.index("b0") < 150  # after some of the others, well before the end


def test_a_batch_that_fails_for_good_is_yielded_with_its_error() -> None:
    def call(batch: list[str]) -> str:
        raise Unavailable("down")

    results = list(in_parallel([["a"], ["b"], ["c"]], call, 2, "test"))
    assert sorted(b[0] for b, _ in results) == ["a", "b", "c"]
    assert all(isinstance(r, UpstreamError) for _, r in results)


def test_no_batch_starts_once_stopping() -> None:
    started: list[str] = []

    def call(batch: list[str]) -> str:
        started.append(batch[0])
        return batch[0]

    seen: list[str] = []
    for batch, _ in in_parallel(
        [[f"b{i}"] for i in range(10)], call, 2, "test", lambda: bool(seen)
    ):
        seen.append(batch[0])
    assert len(started) == 2 and sorted(seen) == sorted(started)
