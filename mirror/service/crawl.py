"""Crawl use case: discover documents (links, searches) and mirror them, resumable.

The frontier lives in the store (store/tables/crawls.py), so a run that is killed continues where
it stopped when the same command runs again; the walk itself (batches in flight, progress)
is in crawl_walk.py, its options and report in crawl_reports.py, the pure decisions (links,
scope, limits) in mirror/crawl/.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import limits
from .. import names as naming
from ..canonical import canonical_json
from ..errors import InvalidInput, UpstreamError
from ..policy import Mode
from .context import Context
from .crawl_reports import CrawlInterrupted, CrawlOptions, CrawlProgress, CrawlReport, way_found
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
# When links run out, each section (a --prefix, else a seed's tree) is searched for the pages
# no link leads to: this many result pages per section, for at most this many sections, so a
# crawl spends at most a quarter of a minute's Search quota (100/min) on it.
SECTION_SEARCH_PAGES = 5
SECTION_SEARCHES = 5
# Path words that say where docs live, not what they are about (nearly every path starts
# docs/): left out of a section's query, where they would rank every page of the site alike.
GENERIC_PATH_WORDS = frozenset({"docs", "doc", "documentation", "en"})


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
    report = CrawlReport(resumed=start.resumed)
    searched = start.searched
    if spec.searches and not searched:
        found = discover(ctx, spec, scope, report)
        store.crawls.add_found(start.id, found, max_docs=spec.max_docs, now=ctx.clock())
        searched = True
    walk = Walk(
        ctx, store, upstream, start.id, scope, Limits(spec.max_depth, spec.max_docs), options
    )
    try:
        walk.run(progress)
        if not (searched or options.links_only or walk.stopped):
            # Links ran out. A section's landing page often links to little or nothing:
            # search the section for the pages no link leads to, then follow their links.
            found = search_sections(ctx, spec, scope, report)
            store.crawls.add_found(start.id, found, max_docs=spec.max_docs, now=ctx.clock())
            walk.counts = store.crawls.counts(start.id)
            walk.run(progress)
    except KeyboardInterrupt:
        _fill(walk, store, start.id, report)
        report.interrupted = True
        raise CrawlInterrupted(report) from None
    store.crawls.finish(start.id, now=ctx.clock())
    _fill(walk, store, start.id, report)
    return report


def _fill(walk: Walk, store: Store, crawl_id: int, report: CrawlReport) -> None:
    walk.fill(report)
    report.pages = [(n, s, way_found(f)) for n, s, f in store.crawls.pages(crawl_id)]


def discover(
    ctx: Context, spec: CrawlSpec, scope: Any, report: CrawlReport
) -> list[tuple[str, str]]:
    """(name, "search: QUERY") of the documents the crawl's --search queries find, in result
    order: all of them, or with --prefix those inside it (the others are counted as left
    out in `report`)."""
    found: list[tuple[str, str]] = []
    for query in spec.searches:
        for parent in _results(ctx, query, spec.filter, spec.search_pages, report):
            if not spec.prefixes or scope.contains(parent):
                found.append((parent, f"search: {query}"))
            else:
                report.left_out["outside --prefix"] = report.left_out.get("outside --prefix", 0) + 1
    return found


def search_sections(
    ctx: Context, spec: CrawlSpec, scope: Any, report: CrawlReport
) -> list[tuple[str, str]]:
    """(name, "search: QUERY") of the pages a search of each section finds inside the scope:
    the words of the section's path as the query, restricted to its site (the API has no
    prefix filter, so results outside the section are dropped here)."""
    found: list[tuple[str, str]] = []
    sections = list(dict.fromkeys(p.rstrip("/") for p in spec.prefixes or spec.seeds))
    for section in sections[:SECTION_SEARCHES]:
        host, _, path = section.removeprefix(naming.PREFIX).partition("/")
        words = [w for w in re.split(r"[/_.-]+", path) if w]
        query = " ".join(w for w in words if w.lower() not in GENERIC_PATH_WORDS) or host
        query = query[: limits.MAX_TEXT]
        report.section_searches.append(query)
        where = f'data_source = "{host}"'
        try:
            for parent in _results(ctx, query, where, SECTION_SEARCH_PAGES, report):
                if scope.contains(parent):
                    found.append((parent, f"search: {query}"))
        except (UpstreamError, InvalidInput) as exc:
            # Discovery is a bonus: what links found is mirrored whatever a search does.
            report.warnings.append(f"could not search the section {section}: {exc.message}")
    if len(sections) > SECTION_SEARCHES:
        report.warnings.append(
            f"searched the first {SECTION_SEARCHES} of {len(sections)} sections for pages "
            "no link leads to; crawl the others on their own to search them too"
        )
    return found


def _results(
    ctx: Context, query: str, filter: str | None, pages: int, report: CrawlReport
) -> Iterator[str]:
    """The parent document of each result of `query`, page after page (at most `pages`)."""
    from . import search

    token: str | None = None
    for _ in range(pages):
        request = search.make_request(query, SEARCH_PAGE_SIZE, token, filter)
        result = search.search(ctx, request, Mode(), fetch=False)
        report.warnings.extend(result.warnings)
        for chunk in result.page.results:
            yield chunk.parent
        token = result.page.next_page_token
        if not token:
            return


def full_store(ctx: Context) -> Store:
    """The full Store behind `ctx` (a one-thread Reader hands over its own)."""
    return ctx.store.full()
