"""What a crawl's progress says while it waits for the quota: the wall time waited (not the sum
over workers) and an ETA no shorter than the quota needs for what is still queued."""

from __future__ import annotations

from mirror.cli.crawl_progress import CrawlDisplay, eta_seconds
from mirror.service.crawl_walk import CrawlProgress
from mirror.upstream.stats import CallStats


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_quota_waits_of_several_workers_at_once_count_the_clock_once() -> None:
    clock = Clock()
    stats = CallStats(clock)
    for _ in range(4):  # four workers queue for their slots at once...
        stats.waiting(+1)
    clock.now = 10.0
    assert stats.snapshot().quota_wait_wall_seconds == 10.0  # a wait under way counts so far
    for _ in range(4):  # ...and all get them 10 s later
        stats.waiting(-1)
    clock.now = 15.0  # nobody waits for 5 s
    stats.waiting(+1)
    clock.now = 17.0
    stats.waiting(-1)
    assert stats.snapshot().quota_wait_wall_seconds == 12.0  # not 4 x 10 + 2
    assert stats.snapshot().waiting_for_quota == 0


def _progress(done: int, known: int, paced_left: float) -> CrawlProgress:
    return CrawlProgress(
        done=done, known=known, fetched=done, retries=0, quota_wait=0.0, in_flight=4,
        paced_left=paced_left,
    )  # fmt: skip


def test_the_eta_is_never_shorter_than_the_quota_needs_for_what_is_queued() -> None:
    # 100 stored pages walked in 2 s, 300 queued at 10 calls/min (6 s a call, 15 calls):
    # the rate promises 6 s, the quota needs 90.
    p = _progress(100, 400, paced_left=90.0)
    assert eta_seconds(p, 2.0) == 90.0
    assert "ETA 90s" in CrawlDisplay.line(p, 2.0)
    # When the rate is the slower one, it decides.
    assert eta_seconds(_progress(10, 400, paced_left=5.0), 10.0) == 390.0
    # Nothing done yet: the quota's estimate, rather than no estimate.
    assert eta_seconds(_progress(0, 400, paced_left=90.0), 1.0) == 90.0
