"""`dk-mirror crawl`: discover and mirror documents from seeds, links and searches."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ..crawl.broken import MISSING_RUN
from . import render
from .common import (
    duration,
    exit_failed,
    global_options,
    json_option,
    names_from_file,
    open_mirror,
    request_mode,
)
from .crawl_progress import CrawlDisplay
from .main import EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..service.crawl_reports import CrawlReport


@click.command()
@click.argument("names", nargs=-1)
@click.option(
    "--names-file",
    type=click.File("r", encoding="utf-8"),
    help="Seeds, one name per line ('-' for stdin); names are also read from a piped stdin.",
)
@click.option(
    "--prefix",
    "prefixes",
    multiple=True,
    help="Follow links only to names starting with this (repeatable; default: below the seeds).",
)
@click.option("--depth", type=click.IntRange(min=0), help="Follow links at most this many hops.")
@click.option("--max-docs", type=click.IntRange(min=1), help="Take at most this many names.")
@click.option("--search", "searches", multiple=True, help="Add the documents a search finds.")
@click.option(
    "--search-pages", type=click.IntRange(min=1), default=1, show_default=True,
    help="Result pages (100 results each) per --search.",
)  # fmt: skip
@click.option("--filter", "filter_", metavar="FILTER", help="Filter for --search (AIP-160).")
@click.option(
    "--concurrency", type=click.IntRange(min=1, max=64), default=4, show_default=True,
    help="Batches of 20 in flight at once (the quota pacer sets the pace).",
)  # fmt: skip
@click.option(
    "--links-only", is_flag=True,
    help="When links run out, stop (default: search each section for the pages no link "
    "leads to, then follow their links).",
)  # fmt: skip
@click.option("--retry-missing", is_flag=True, help="Ask again for names upstream lacked.")
@click.option(
    "--missing-max-age", callback=duration,
    help="Ask again for names found missing longer ago than this (e.g. 7d).",
)  # fmt: skip
@click.option(
    "--follow-broken-links", is_flag=True,
    help="Follow every link, even of a page whose links keep turning out missing upstream.",
)  # fmt: skip
@click.option("--max-age", callback=duration, help="Refetch copies older than this (e.g. 7d).")
@click.option("--refresh", is_flag=True, help="Fetch even documents already cached.")
@json_option
@global_options
@click.pass_context
def crawl(
    ctx: click.Context,
    names: tuple[str, ...],
    names_file: Any,
    prefixes: tuple[str, ...],
    depth: int | None,
    max_docs: int | None,
    searches: tuple[str, ...],
    search_pages: int,
    filter_: str | None,
    concurrency: int,
    links_only: bool,
    retry_missing: bool,
    missing_max_age: float | None,
    follow_broken_links: bool,
    max_age: float | None,
    refresh: bool,
    as_json: bool,
) -> None:
    """Mirror a site: seeds, the pages they link to, and search results, breadth-first.

    Links are followed inside the --prefix scopes (without one: below each seed's own
    name). When links run out, each section is searched (its path's words, on its site) for
    the pages no link leads to, unless --links-only or --search (or the seeds come from a
    names file and no --prefix names a section). The frontier is kept in the store: rerun the same command after an interruption
    (Ctrl-C, a crash, kill -9) and it continues; nothing already stored is fetched again.
    Names upstream does not have are remembered and not asked for again unless
    --retry-missing or --missing-max-age says so. Once 40 links of one page in a row turn
    out missing, the rest of that page's links are skipped (each costs quota), and the
    summary says so; --follow-broken-links follows them.
    """
    from ..service.crawl import make_spec
    from ..service.crawl_reports import CrawlInterrupted, CrawlOptions
    from .embedding import embedding_shown, interrupted_note

    seeds = list(names)
    if names_file is not None:
        seeds += names_from_file(names_file)
    elif not seeds and not searches and not sys.stdin.isatty():
        seeds += names_from_file(sys.stdin)
    spec = make_spec(
        seeds,
        prefixes=prefixes,
        searches=searches,
        filter=filter_,
        search_pages=search_pages,
        max_depth=depth,
        max_docs=max_docs,
    )
    mirror = open_mirror(ctx)
    options = CrawlOptions(
        concurrency=concurrency,
        mode=request_mode(mirror, max_age=max_age, refresh=refresh),
        retry_missing=retry_missing,
        missing_max_age=missing_max_age,
        follow_broken_links=follow_broken_links,
        # A names file lists pages, not sections: searching "the rest" of each of hundreds of
        # pages' trees spends the Search quota on what nobody asked for (--prefix names one).
        links_only=links_only or (names_file is not None and not prefixes),
    )
    display = CrawlDisplay()
    try:
        with embedding_shown(mirror, bar=False):
            report = mirror.crawl(spec, options, display)
            display.close()  # the crawl's bar before the embedding's summary line
    except CrawlInterrupted as stop:
        display.close()
        _summary(stop.report, as_json)
        click.echo(
            f"interrupted: what was fetched is saved ({stop.report.queued} name(s) still "
            "queued); run the same command again to continue",
            err=True,
        )
        if note := interrupted_note(stop):
            click.echo(note, err=True)
        ctx.exit(EXIT_INTERRUPTED)
    _summary(report, as_json)
    if report.failed or report.stopped:
        exit_failed(
            ctx,
            stopped=report.stopped,
            error=report.error,
            advice=f"{len(report.failed)} document(s) failed and {report.queued} were not "
            "tried; run the same command again to continue",
        )


def _summary(report: CrawlReport, as_json: bool) -> None:
    for warning in report.warnings:
        click.echo(f"warning: {render.clean(warning, multiline=True)}", err=True)
    if as_json:
        click.echo(render.to_json(report.to_json()))
        return
    click.echo(
        f"{report.fetched} fetched, {report.had} already had, {report.unchanged} unchanged, "
        f"{len(report.missing)} missing, {len(report.failed)} failed "
        f"(of {report.known} known{', resumed' if report.resumed else ''})",
        err=True,
    )
    ways = report.found_by
    click.echo(
        f"found: {ways['seed']} seed(s), {ways['link']} by link, {ways['search']} by search"
        + "".join(f" (searched {render.clean(q)!r})" for q in report.section_searches),
        err=True,
    )
    for why, count in report.left_out.items():
        click.echo(f"search results left out: {count} ({why})", err=True)
    click.echo(
        f"upstream calls: {report.requests}, {report.not_found_calls} of them on names upstream "
        f"does not have (broken links); {report.quota_wait:.1f}s waiting for quota",
        err=True,
    )
    mine = report.this_run
    if mine.get("fetched", 0) != report.fetched or mine.get("had", 0) != report.had:
        # Resumed, or other crawlers share the frontier: the counts above are the crawl's.
        click.echo(
            f"this run: {mine.get('fetched', 0)} fetched, {mine.get('had', 0)} already had, "
            f"{mine.get('unchanged', 0)} unchanged, {mine.get('missing', 0)} missing, "
            f"{mine.get('failed', 0)} failed (the rest by earlier runs or other crawlers)",
            err=True,
        )
    for name in report.missing[:20]:
        click.echo(f"missing: {render.clean(name)}", err=True)
    if len(report.missing) > 20:
        click.echo(f"... and {len(report.missing) - 20} more missing (--json lists all)", err=True)
    for name in report.failed:
        click.echo(f"failed: {render.clean(name)}", err=True)
    if report.skipped:
        pages = ", ".join(render.clean(n) for n in report.skipped_from[:3])
        more = f" and {len(report.skipped_from) - 3} more" if len(report.skipped_from) > 3 else ""
        click.echo(
            f"skipped: {report.skipped} link(s) of {pages}{more}, whose links kept turning out "
            f"missing upstream ({MISSING_RUN} in a row); to fetch them too, run the same command "
            "again with --follow-broken-links",
            err=True,
        )
