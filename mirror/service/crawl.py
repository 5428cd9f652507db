"""Crawl use case: discover documents (links, searches) and mirror them, resumable.

The frontier lives in the store (store/tables/crawls.py), so a run that is killed continues where
it stopped when the same command runs again; the walk itself (batches in flight, progress)
is in crawl_walk.py, its options and report in crawl_reports.py, the pure decisions (links,
scope, limits) in mirror/crawl/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import names as naming
from ..canonical import canonical_json
from ..errors import InvalidInput
from ..policy import Mode
from .context import Context
from .crawl_reports import CrawlInterrupted, CrawlOptions, CrawlProgress, CrawlReport
from .crawl_walk import Walk
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
    return ctx.store.full()
