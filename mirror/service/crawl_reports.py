"""What a crawl is told and what it reports: its options, progress and report.

Apart from crawl.py (the use case) and crawl_walk.py (the walk), because both use them and
the walk must not import the use case that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import UpstreamError
from ..policy import Mode

# Batches in flight at once: 4 keeps a 100 calls/min quota busy even at 2-3 s per call,
# while the pacer, not the concurrency, sets the pace.
DEFAULT_CONCURRENCY = 4


@dataclass(frozen=True, slots=True)
class CrawlOptions:
    """How to run a crawl; not part of what it is (a rerun may change them)."""

    concurrency: int = DEFAULT_CONCURRENCY
    mode: Mode = field(default_factory=Mode)  # --max-age, --refresh: which copies are stale
    retry_missing: bool = False  # ask again for names upstream lacked
    # Follow every link, even those of a page whose links keep turning out missing (and
    # queue again the ones an earlier run skipped): crawl/broken.py.
    follow_broken_links: bool = False
    missing_max_age: float | None = None  # ...or only for those found missing longer ago


@dataclass(slots=True)
class CrawlReport:
    """What a crawl did: counts over the whole crawl (a resumed one included)."""

    known: int = 0
    fetched: int = 0
    had: int = 0
    unchanged: int = 0
    missing: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    queued: int = 0  # left to do (interrupted or stopped)
    # Names this process settled, by state (the counts above are the crawl's, which other
    # crawlers sharing its frontier on PostgreSQL add to).
    this_run: dict[str, int] = field(default_factory=dict)
    # Links not followed: found on a page whose links kept turning out missing upstream.
    skipped: int = 0
    skipped_from: list[str] = field(default_factory=list)
    resumed: bool = False
    requests: int = 0  # upstream calls this run (retries included)
    retries: int = 0
    quota_wait: float = 0.0
    error: UpstreamError | None = None
    stopped: str | None = None
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The report as `crawl --json` prints it (stable key order)."""
        return {
            "known": self.known,
            "fetched": self.fetched,
            "alreadyHad": self.had,
            "unchanged": self.unchanged,
            "missing": list(self.missing),
            "failed": list(self.failed),
            "queued": self.queued,
            "thisRun": {
                "fetched": self.this_run.get("fetched", 0),
                "alreadyHad": self.this_run.get("had", 0),
                "unchanged": self.this_run.get("unchanged", 0),
                "missing": self.this_run.get("missing", 0),
                "failed": self.this_run.get("failed", 0),
            },
            "skipped": self.skipped,
            "skippedFrom": list(self.skipped_from),
            "resumed": self.resumed,
            "requests": self.requests,
            "retries": self.retries,
            "quotaWaitSeconds": round(self.quota_wait, 3),
            "error": self.error.message if self.error else None,
            "hint": self.error.hint if self.error else None,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class CrawlProgress:
    """A crawl's progress, as a progress display shows it."""

    done: int
    known: int
    fetched: int
    retries: int
    quota_wait: float
    in_flight: int


class CrawlInterrupted(KeyboardInterrupt):
    """Ctrl-C during a crawl, after every finished batch was committed; `.report` says how far."""

    def __init__(self, report: CrawlReport) -> None:
        super().__init__(f"crawl interrupted after saving {report.fetched} document(s)")
        self.report = report
