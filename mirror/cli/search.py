"""`dk-mirror search` and `dk-mirror answer`."""

from __future__ import annotations

import gc
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from . import render
from .common import as_of_option, global_options, json_option, open_mirror

if TYPE_CHECKING:
    from ..models import Document


def _marked(segments: list[tuple[str, bool]]) -> str:
    # Bold on a terminal; Markdown-style **word** when piped, so marks survive in plain text.
    tty = sys.stdout.isatty()
    return "".join(
        (click.style(s, bold=True) if tty else f"**{s}**") if marked else s
        for s, marked in ((render.clean(s), marked) for s, marked in segments)
    )


def _title(document: Document | None) -> str:
    # As text: the stored title may hold `&nbsp;` or Markdown's backticks (--json keeps it).
    from ..search.snippets import plain_title

    return plain_title(document.title) if document and document.title else ""


def _when(epoch: float | None) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC") if epoch else "?"


@click.command()
@click.argument("query")
@click.option(
    "--limit",
    type=click.IntRange(1, 100),
    default=5,
    show_default=True,
    help="Results per page (pageSize).",
)
@click.option("--page-token", help="nextPageToken of the previous page.")
@click.option(
    "--filter",
    "filter_text",
    metavar="FILTER",
    help='e.g. data_source = "web.dev" AND update_time >= "2025-01-01T00:00:00Z"',
)
@click.option("--fetch", is_flag=True, help="Also mirror the full documents of the hits.")
@as_of_option
@json_option
@global_options
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    limit: int,
    page_token: str | None,
    filter_text: str | None,
    fetch: bool,
    as_json: bool,
) -> None:
    """Search the docs: upstream when online (recorded for replay), else offline."""
    mirror = open_mirror(ctx, readonly=None)  # online, it records the page it got
    # First: the embedding model (when this search ranks with vectors) loads in the background
    # while the rest of the search imports, opens and ranks lexically (service/warmup.py).
    if not fetch:  # --fetch goes upstream, or is a usage error offline
        from .start import take_helper

        helper = take_helper()  # forked as the command started, if it looked like this search
        if helper is not None:
            # A cold offline search, in a process that exits after it: collections cost
            # ~14 ms of its CPU (getrusage on the corpora store) and free next to nothing
            # before the exit does.
            gc.disable()
        mirror.warm_search(
            query, page_size=limit, page_token=page_token, filter=filter_text, helper=helper
        )
    result = mirror.search_documents(
        query, page_size=limit, page_token=page_token, filter=filter_text, fetch=fetch
    )
    for warning in result.warnings:
        click.echo(f"warning: {render.clean(warning, multiline=True)}", err=True)
    if as_json:
        # How fresh each page of the hits is, as the store holds it (as of then, with --as-of).
        held = mirror.provenance([hit.parent for hit in result.page.results])
        click.echo(render.to_json(result.to_json(held)))
        return
    if not result.page.results:
        click.echo(f"no results ({result.source})", err=True)
        return
    previous = None
    pages = 0  # numbered by page: a page's second chunk is not a result of its own
    hits = result.page.results
    snippets = mirror.snippets(query, [hit.content for hit in hits], [hit.parent for hit in hits])
    for hit, snippet in zip(result.page.results, snippets, strict=True):
        if hit.parent == previous:
            # The same page's next-best chunk (local results are grouped by page).
            click.echo(f"   + {_marked(snippet)}\n")
            continue
        previous = hit.parent
        pages += 1
        title = _title(hit.document) or hit.parent
        score = f" {hit.relevance_score:.2f}" if hit.relevance_score is not None else ""
        click.echo(
            f"{pages}. {render.clean(title)}\n   {render.clean(hit.parent)}  [{result.source}{score}]"
        )
        click.echo(f"   {_marked(snippet)}\n")
    note = f"source: {result.source}"
    if result.as_of is not None:
        note += f", as of {_when(result.as_of)}"
    if result.recorded_at:
        note += f", recorded {_when(result.recorded_at)}"
    click.echo(note, err=True)
    if result.page.next_page_token:
        click.echo(f"more: --page-token {render.clean(result.page.next_page_token)}", err=True)


@click.command()
@click.argument("question")
@click.option("--filter", "filter_text", metavar="FILTER", help="Same grammar as search.")
@json_option
@global_options
@click.pass_context
def answer(ctx: click.Context, question: str, filter_text: str | None, as_json: bool) -> None:
    """Answer a question (upstream AnswerQuery: 50/day; offline: recorded or extractive)."""
    mirror = open_mirror(ctx, readonly=None)  # online, it counts quota and records the answer
    from .start import take_helper

    # An offline answer quotes the pages `search --offline` ranks first: a cold one ranks
    # them with the helper forked as the command started, as a cold search does.
    helper = take_helper()
    if helper is not None:
        gc.disable()  # as in `search`: a process that exits after one answer
        mirror.warm_answer(question, filter=filter_text, helper=helper)
    result = mirror.answer_query(question, filter=filter_text)
    for warning in result.warnings:
        click.echo(f"warning: {render.clean(warning, multiline=True)}", err=True)
    if as_json:
        held = mirror.provenance(result.answer.reference_names)
        click.echo(render.to_json(result.to_json(held)))
        return
    click.echo(render.clean(result.answer.answer_text.rstrip(), multiline=True) + "\n")
    references = result.answer.references
    if references:
        click.echo("References:")
        for i, ref in enumerate(references, start=1):
            title = _title(ref.document)
            title = f"  {render.clean(title)}" if title else ""
            click.echo(f"  [{i}] {render.clean(ref.parent)}{title}")
    note = f"source: {result.source}"
    if result.recorded_at:
        note += f", recorded {_when(result.recorded_at)}"
    if result.stale:
        note += f"; STALE: changed since: {render.clean(', '.join(result.stale_names))}"
    if result.quota_used is not None:
        note += f"; quota {result.quota_used}/{result.quota_limit} today"
    click.echo(note, err=True)


search_commands = [search, answer]
