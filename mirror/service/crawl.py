"""Crawl use case: discover documents (links, searches) and mirror them, resumable.

The frontier lives in the store (store/tables/crawls.py), so a run that is killed continues where
it stopped when the same command runs again; the walk itself (batches in flight, progress)
is in crawl_walk.py, the pure decisions (links, scope, limits) in mirror/crawl/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import names as naming
from ..canonical import canonical_json
from ..errors import InvalidInput, UpstreamError
from ..policy import Mode
from .context import Context
from .crawl_walk import CrawlProgress, Walk
from .documents import prefix_form

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = [
    "CrawlInterrupted",
    "CrawlOptions",
    "CrawlProgress",
    "CrawlReport",
    "CrawlSpec",
    "crawl",
    "make_spec",
]

# Batches in flight at once: 4 keeps a 100 calls/min quota busy even at 2-3 s per call,
# while the pacer, not the concurrency, sets the pace.
DEFAULT_CONCURRENCY = 4
# Results per search page asked for discovery (the API's maximum).
SEARCH_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class CrawlSpec:
    """What to crawl; the same spec is the same crawl, so a rerun continues it."""

    seeds: tuple[str, ...] = ()  # canonical names
    prefixes: tuple[str, ...] = ()  # canonical prefix forms (as `ls --prefix`)
    searches: tuple[str, ...] = ()
    filter: str | None = None
    search_pages: int = 1
    max_depth: int | None = None
    max_docs: int | None = None

    def describe(self) -> dict[str, Any]:
        """The spec as JSON (recorded with the crawl; its hash is the crawl's key)."""
        return {
            "seeds": list(self.seeds),
            "prefixes": list(self.prefixes),
            "searches": list(self.searches),
            "filter": self.filter,
            "searchPages": self.search_pages,
            "maxDepth": self.max_depth,
            "maxDocs": self.max_docs,
        }

    @property
    def key(self) -> str:
        """sha256 of the canonical description."""
        return hashlib.sha256(canonical_json(self.describe()).encode()).hexdigest()


def make_spec(
    seeds: Sequence[str] = (),
    *,
    prefixes: Sequence[str] = (),
    searches: Sequence[str] = (),
    filter: str | None = None,
    search_pages: int = 1,
    max_depth: int | None = None,
    max_docs: int | None = None,
) -> CrawlSpec:
    """Validate and normalise a crawl's inputs before anything is opened or sent."""
    from .search import make_request

    canonical_filter = None
    for query in searches:
        canonical_filter = make_request(query, SEARCH_PAGE_SIZE, None, filter).filter
    if not searches and filter is not None:
        raise InvalidInput("--filter applies to --search", hint="add --search QUERY")
    if not (seeds or searches):
        raise InvalidInput(
            "nothing to crawl: give seed names, --names-file, or --search",
            hint="e.g. dk-mirror crawl developer.chrome.com/docs/extensions --depth 2",
        )
    for number, what in ((search_pages, "--search-pages"), (max_docs, "--max-docs")):
        if number is not None and number < 1:
            raise InvalidInput(f"{what} must be at least 1, not {number}")
    if max_depth is not None and max_depth < 0:
        raise InvalidInput(f"--depth must be 0 or more, not {max_depth}")
    return CrawlSpec(
        seeds=tuple(dict.fromkeys(naming.normalize_every(seeds))),
        prefixes=tuple(dict.fromkeys(prefix_form(p) for p in prefixes)),
        searches=tuple(dict.fromkeys(searches)),
        filter=canonical_filter,
        search_pages=search_pages,
        max_depth=max_depth,
        max_docs=max_docs,
    )


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


class CrawlInterrupted(KeyboardInterrupt):
    """Ctrl-C during a crawl, after every finished batch was committed; `.report` says how far."""

    def __init__(self, report: CrawlReport) -> None:
        super().__init__(f"crawl interrupted after saving {report.fetched} document(s)")
        self.report = report


def crawl(
    ctx: Context,
    spec: CrawlSpec,
    options: CrawlOptions,
    progress: Callable[[CrawlProgress], None] | None = None,
) -> CrawlReport:
    """Run (or continue) the crawl `spec`: seeds and search results first, then the pages
    they link to inside the scope, breadth-first, each batch committed as it arrives."""
    from ..crawl.frontier import Limits
    from ..crawl.scope import Scope

    if options.concurrency < 1:
        raise InvalidInput(f"--concurrency must be at least 1, not {options.concurrency}")
    upstream = ctx.upstream()  # refuses offline before the store records anything
    store = full_store(ctx)
    # Each worker reads the store while, on PostgreSQL, its claim holds a writer connection
    # through the fetch (store/tables/crawls.py): two connections a worker, none waited for.
    store.size_for(2 * options.concurrency)
    start = store.crawls.begin(
        spec.key,
        canonical_json(spec.describe()),
        spec.seeds,
        now=ctx.clock(),
        max_docs=spec.max_docs,
        retry_skipped=options.follow_broken_links,
    )
    scope = Scope.of(spec.prefixes, spec.seeds)
    warnings: list[str] = []
    if spec.searches and not start.searched:
        found = discover(ctx, spec, scope, warnings)
        store.crawls.add_found(start.id, found, max_docs=spec.max_docs, now=ctx.clock())
    walk = Walk(
        ctx, store, upstream, start.id, scope, Limits(spec.max_depth, spec.max_docs), options
    )
    report = CrawlReport(resumed=start.resumed, warnings=warnings)
    try:
        walk.run(progress)
    except KeyboardInterrupt:
        walk.fill(report)
        report.interrupted = True
        raise CrawlInterrupted(report) from None
    store.crawls.finish(start.id, now=ctx.clock())
    walk.fill(report)
    return report


def discover(
    ctx: Context, spec: CrawlSpec, scope: Any, warnings: list[str]
) -> list[tuple[str, str]]:
    """(name, "search: QUERY") of the documents the crawl's searches find, inside the scope
    when prefixes were given, in result order."""
    from . import search

    found: list[tuple[str, str]] = []
    for query in spec.searches:
        token: str | None = None
        for _ in range(spec.search_pages):
            request = search.make_request(query, SEARCH_PAGE_SIZE, token, spec.filter)
            result = search.search(ctx, request, Mode(), fetch=False)
            warnings.extend(result.warnings)
            for chunk in result.page.results:
                if not spec.prefixes or scope.contains(chunk.parent):
                    found.append((chunk.parent, f"search: {query}"))
            token = result.page.next_page_token
            if not token:
                break
    return found


def full_store(ctx: Context) -> Store:
    """The full Store behind `ctx` (a one-thread Reader hands over its own)."""
    from ..store.reader import Reader

    store = ctx.store
    return store.full() if isinstance(store, Reader) else store
