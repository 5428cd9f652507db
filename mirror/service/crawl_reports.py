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
    links_only: bool = False  # when links run out, do not search the sections for the rest


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
    quota_wait: float = 0.0  # wall time with a call waiting for the quota
    not_found_calls: int = 0  # calls answered 404: spent on names upstream does not have
    error: UpstreamError | None = None
    stopped: str | None = None
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    # How each name of the frontier was found: (name, state, "seed" | "link" | "search").
    pages: list[tuple[str, str, str]] = field(default_factory=list)
    # Search results not taken, and why (e.g. "outside --prefix"): counts this run.
    left_out: dict[str, int] = field(default_factory=dict)
    section_searches: list[str] = field(default_factory=list)  # queries run when links ran out

    @property
    def found_by(self) -> dict[str, int]:
        """How many names each way found: seed, link, search."""
        counts = dict.fromkeys(FOUND_BY, 0)
        for _, _, way in self.pages:
            counts[way] += 1
        return counts

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
            "notFoundCalls": self.not_found_calls,
            "error": self.error.message if self.error else None,
            "hint": self.error.hint if self.error else None,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
            "warnings": list(self.warnings),
            "foundBy": self.found_by,
            "sectionSearches": list(self.section_searches),
            "searchResultsLeftOut": dict(self.left_out),
            "pages": [
                {"name": name, "state": state, "foundBy": way} for name, state, way in self.pages
            ],
        }


FOUND_BY = ("seed", "link", "search")


def way_found(found_from: str) -> str:
    """How a frontier row was found, from what the frontier records (seed, search: Q, a page)."""
    if found_from == "seed":
        return "seed"
    return "search" if found_from.startswith("search: ") else "link"


@dataclass(frozen=True, slots=True)
class CrawlProgress:
    """A crawl's progress, as a progress display shows it."""

    done: int
    known: int
    fetched: int
    retries: int
    quota_wait: float  # wall time with a call waiting for the quota (not summed over workers)
    in_flight: int
    # Seconds the quota alone needs for the names still queued (one paced call per batch
    # of 20): an ETA is never shorter than this, whatever the rate so far.
    paced_left: float = 0.0


class CrawlInterrupted(KeyboardInterrupt):
    """Ctrl-C during a crawl, after every finished batch was committed; `.report` says how far."""

    def __init__(self, report: CrawlReport) -> None:
        super().__init__(f"crawl interrupted after saving {report.fetched} document(s)")
        self.report = report
