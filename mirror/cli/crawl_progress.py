"""A crawl's progress on stderr: a live bar on a terminal (cli/progress.py), a plain line every
few seconds else."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, TextIO

from .progress import Bar

if TYPE_CHECKING:
    from ..service.crawl_reports import CrawlProgress

# Seconds between plain progress lines when stderr is not a terminal (CI logs, pipes).
PLAIN_EVERY = 5.0


class CrawlDisplay:
    """Called with each CrawlProgress; close() at the end (the bar is left complete)."""

    def __init__(self, stream: TextIO | None = None, *, every: float = PLAIN_EVERY) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.every = every
        self.started = time.monotonic()
        self._last_line = self.started
        self._bar = Bar("crawling", unit="doc", stream=self.stream)

    def __call__(self, p: CrawlProgress) -> None:
        """Show progress `p`."""
        if self.live:
            # The total grows as links are found; the bar follows it. tqdm's own ETA is the
            # rate's; when the quota is the slower, say what the quota needs.
            left = eta_seconds(p, time.monotonic() - self.started)
            eta = f"ETA {left:.0f}s (quota), " if left is not None and left == p.paced_left else ""
            self._bar.update(p.done, p.known, note=eta + _extras(p))
            return
        now = time.monotonic()
        if now - self._last_line >= self.every:
            self._last_line = now
            self.stream.write(self.line(p, now - self.started) + "\n")
            self.stream.flush()

    @staticmethod
    def line(p: CrawlProgress, elapsed: float) -> str:
        """One plain progress line: done of known, rate, ETA, retries, quota wait."""
        rate = p.done / elapsed if elapsed > 0 else 0.0
        left = eta_seconds(p, elapsed)
        eta = f"{left:.0f}s" if left is not None else "?"
        return f"crawl: {p.done}/{p.known} documents, {rate:.1f}/s, ETA {eta}, {_extras(p)}"

    def close(self) -> None:
        """Finish the bar, if one was drawn."""
        self._bar.close()


def eta_seconds(p: CrawlProgress, elapsed: float) -> float | None:
    """Seconds left: the rate so far, but never less than the quota needs for what is
    queued (a crawl's first batches come in a burst, so the rate alone promises too much)."""
    rate = p.done / elapsed if elapsed > 0 else 0.0
    if rate <= 0:
        return p.paced_left or None
    return max((p.known - p.done) / rate, p.paced_left)


def _extras(p: CrawlProgress) -> str:
    return f"{p.fetched} fetched, {p.retries} retries, {p.quota_wait:.1f}s waiting for quota"
