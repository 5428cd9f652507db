"""Commands about keeping documents current and their past: refresh, history, diff, changes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..models import rfc3339
from . import render
from .common import (
    duration,
    exit_failed,
    global_options,
    json_option,
    keep_versions_option,
    open_mirror,
)
from .main import EXIT_INTERRUPTED
from .progress import Bar


@click.command()
@click.option(
    "--older-than",
    callback=duration,
    help="Only copies last fetched or checked longer ago than this (e.g. 2d).",
)
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option(
    "--concurrency",
    type=click.IntRange(min=1, max=16),
    default=None,
    help="Batches of 20 in flight at once [default 4]; all stay under the quota pace.",
)
@keep_versions_option("Versions of each refreshed document to keep")
@json_option
@global_options
@click.pass_context
def refresh(
    ctx: click.Context,
    older_than: float | None,
    prefix: str | None,
    concurrency: int | None,
    as_json: bool,
) -> None:
    """Bring stored documents up to date: compare updateTime (metadata only), refetch changes.

    Asks upstream for the metadata of every stored copy in scope (BASIC view, 20 per call,
    no content), marks unchanged copies as checked now, refetches only the changed ones (a
    new version each) and flags names upstream no longer has (their copies are kept).
    """
    from ..service.refresh import RefreshInterrupted
    from .embedding import embedding_shown, interrupted_note

    mirror = open_mirror(ctx)
    try:
        with embedding_shown(mirror, bar=False), Bar("refreshing") as progress:
            report = mirror.refresh(
                older_than=older_than, prefix=prefix, concurrency=concurrency, progress=progress
            )
    except RefreshInterrupted as stop:
        done = stop.report
        if as_json:
            click.echo(render.to_json(done.to_json()))
        click.echo(
            f"interrupted: {done.checked} of {done.selected} checked, "
            f"{len(done.changed)} refetched, all saved; run the same command again "
            "(add --older-than to skip what was just checked)",
            err=True,
        )
        if note := interrupted_note(stop):
            click.echo(note, err=True)
        # The line above says it all: not the group's bare "interrupted" after it.
        ctx.exit(EXIT_INTERRUPTED)
    if as_json:
        click.echo(render.to_json(report.to_json()))
    else:
        click.echo(
            f"{report.checked} checked, {report.unchanged} unchanged, "
            f"{len(report.changed)} changed ({report.new_versions} new version(s)), "
            f"{len(report.gone)} gone upstream, {len(report.failed)} failed "
            f"(of {report.selected})",
            err=True,
        )
        for name in report.changed:
            click.echo(f"changed: {render.clean(name)}", err=True)
        for name in report.gone:
            click.echo(f"gone upstream (kept here): {render.clean(name)}", err=True)
        for name in report.failed:
            click.echo(f"failed: {render.clean(name)}", err=True)
    if report.failed:
        exit_failed(
            ctx,
            stopped=report.stopped,
            error=report.error,
            # Every copy left behind: a rejected key stops the run after one batch, and the
            # copies never asked are as stale as the failed ones.
            advice=f"{report.not_refreshed} of {report.selected} document(s) were not "
            "refreshed; run the same command again (with --older-than, only those are asked "
            "again)",
        )


@click.command()
@click.argument("name", required=False)
@click.option("--prune", is_flag=True, help="Drop versions beyond --keep-versions (all documents "
              "unless NAME is given).")  # fmt: skip
@keep_versions_option("With --prune: versions of each document to keep")
@json_option
@global_options
@click.pass_context
def history(ctx: click.Context, name: str | None, prune: bool, as_json: bool) -> None:
    """List the kept versions of a document: number, updateTime, fetch time, sha256.

    Newest first; the version the store serves now is marked `current`.
    """
    if prune:
        mirror = open_mirror(ctx)
        dropped = mirror.prune_history(name=name)
        if as_json:
            click.echo(render.to_json({"pruned": dropped, "keep": mirror.settings.keep_versions}))
        else:
            click.echo(
                f"pruned {dropped} version(s); at most {mirror.settings.keep_versions} "
                "kept per document",
                err=True,
            )
        return
    if not name:
        raise click.UsageError("give a document NAME (or --prune)")
    mirror = open_mirror(ctx, readonly=True)
    versions = mirror.history(name)
    if as_json:
        click.echo(
            render.to_json({"name": versions[0].name, "versions": [v.to_json() for v in versions]})
        )
        return
    rows = [("", "version", "updateTime", "fetched", "sha256")]
    for v in versions:
        mark = "*" if v.current else ""
        rows.append((mark, str(v.number), v.update_time or "-", rfc3339(v.fetched_at) or "-",
                     v.sha256[:16]))  # fmt: skip
    click.echo(render.clean(versions[0].name))
    click.echo(render.table(rows))
    gone = next((v.gone_since for v in versions if v.gone_since is not None), None)
    if gone is not None:
        click.echo(f"upstream no longer has it (since {rfc3339(gone)}); the copy is kept", err=True)


@click.command()
@click.argument("name")
@click.option("--from", "old", metavar="V", help="Version number or hash prefix [default: the "
              "one before --to].")  # fmt: skip
@click.option("--to", "new", metavar="V", help="Version number or hash prefix [default: current].")
@json_option
@global_options
@click.pass_context
def diff(ctx: click.Context, name: str, old: str | None, new: str | None, as_json: bool) -> None:
    """Print a unified diff of a document's Markdown between two kept versions."""
    mirror = open_mirror(ctx, readonly=True)
    result = mirror.diff_versions(name, old=old, new=new)
    if as_json:
        click.echo(render.to_json(result.to_json()))
        return
    if not result.text:
        click.echo(
            f"versions {result.old.number} and {result.new.number} have the same content",
            err=True,
        )
        return
    # Piped, the diff goes out as it is; on a terminal control characters are escaped.
    text = render.clean(result.text, multiline=True) if sys.stdout.isatty() else result.text
    click.echo(text, nl=False)


@click.command()
@click.option("--since", metavar="7d|ID|DATE", help="Only changes since this long ago (7d, 12h), "
              "after this event id, or since this date (2026-11-30, or an RFC 3339 time).")  # fmt: skip
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option("--lock", "lock", type=click.Path(dir_okay=False, path_type=Path),
              help="Only the documents this lock file pins.")  # fmt: skip
@click.option("--kind", "kind", metavar="K", help="added, changed or removed; or what a change "
              "touched: signal, structure, code, text, cosmetic.")  # fmt: skip
@click.option("--limit", type=click.IntRange(min=1), default=100, show_default=True,
              help="At most this many changes.")  # fmt: skip
@json_option
@global_options
@click.pass_context
def changes(
    ctx: click.Context,
    since: str | None,
    prefix: str | None,
    lock: Path | None,
    kind: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """List what changed in the store, newest first, each with the command showing its diff.

    Every fetch, crawl, refresh, import, snapshot import, sync and removal that changes a
    document's content is recorded when it is written; a change is classified as signal
    (a deprecation, caution or warning notice, a limit, an API version), structure, code,
    text or cosmetic.
    """
    mirror = open_mirror(ctx, readonly=True)
    found = mirror.list_changes(since=since, prefix=prefix, lock=lock, kind=kind, limit=limit)
    if as_json:
        click.echo(render.to_json({"changes": [event.to_json() for event in found]}))
        return
    if not found:
        click.echo("no changes recorded that match (the log records every write since the "
                   "store was created or upgraded)", err=True)  # fmt: skip
        return
    for event in found:
        when = (rfc3339(event.observed_at) or "")[:16].replace("T", " ")
        click.echo(render.clean(f"#{event.id}  {when}Z  {event.kind:<7}  {event.name}  "
                                f"{event.headline() if event.kind == 'changed' else ''}"
                                ).rstrip())  # fmt: skip
        click.echo(f"    {render.clean(event.diff_command())}")
