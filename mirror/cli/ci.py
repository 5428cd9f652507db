"""Commands for reproducible CI: `snapshot ...`, `lock`, `sync --locked`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ..service import Mirror

if TYPE_CHECKING:
    from ..service.ci import ImportReport
from . import render
from .common import (
    as_of_option,
    document_limit,
    duration,
    global_options,
    json_option,
    max_document_option,
    names_from_file,
    open_mirror,
    warn_pruned,
)

PathArg = click.Path(path_type=Path, dir_okay=False)
ExistingFile = click.Path(path_type=Path, dir_okay=False, exists=True)


@click.group()
def snapshot() -> None:
    """Pinned, hash-verified document sets: export, verify, import, diff, check."""


@snapshot.command(name="export")
@click.argument("out", type=PathArg)
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option("--data-source", help="Only this dataSource, e.g. developer.chrome.com.")
@click.option("--names-file", type=click.File("r", encoding="utf-8"), help="One name per line.")
@click.option(
    "--lock", "lock_file", type=ExistingFile, help="Exactly the documents of a lock file."
)
@click.option("--since", type=ExistingFile, help="Write a delta against this full snapshot.")
@as_of_option
@json_option
@global_options
@click.pass_context
def export(
    ctx: click.Context,
    out: Path,
    prefix: str | None,
    data_source: str | None,
    names_file: Any,
    lock_file: Path | None,
    since: Path | None,
    as_json: bool,
) -> None:
    """Write the selected documents to OUT: same documents, same bytes, on any machine."""
    mirror = open_mirror(ctx, readonly=True)
    warn_pruned(mirror, prefix)
    manifest = mirror.export_snapshot(
        out,
        prefix=prefix,
        data_source=data_source,
        names=names_from_file(names_file) if names_file else None,
        lock=lock_file,
        since=since,
    )
    if as_json:
        click.echo(render.to_json({"path": str(out), **manifest.summary()}))
    else:
        click.echo(
            f"wrote {manifest.kind} snapshot {out}: {manifest.count} entries, {manifest.root}"
        )


@snapshot.command()
@click.argument("file", type=ExistingFile)
@max_document_option
@json_option
@click.pass_context
def verify(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Recompute every hash offline; exit 1 naming each document that does not match."""
    report = Mirror.verify_snapshot(file, max_document_bytes=document_limit(ctx))
    if as_json:
        click.echo(render.to_json(report.to_json()))
    elif report.ok and report.manifest:
        click.echo(f"ok: {report.manifest.count} entries, {report.manifest.root}")
    for problem in report.problems:
        click.echo(f"error: {render.clean(problem)}", err=True)
    if not report.ok:
        ctx.exit(1)


@snapshot.command(name="import")
@click.argument("file", type=ExistingFile)
@max_document_option
@json_option
@global_options
@click.pass_context
def import_(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Verify FILE, then write it into the store all or nothing (a delta needs its base)."""
    from .embedding import embedding_shown

    mirror = open_mirror(ctx)
    with embedding_shown(mirror):  # the report, then the embedding's summary line
        report = mirror.import_snapshot(file)
        _said(report, as_json)


def _said(report: ImportReport, as_json: bool) -> None:
    """What `snapshot import` prints of its report."""
    if as_json:
        click.echo(render.to_json(report.to_json()))
    elif report.already:
        click.echo(
            f"delta snapshot already applied: the store matches {report.root}; nothing written",
            err=True,
        )
    elif report.kind == "delta":
        click.echo(
            f"imported delta snapshot: {report.written} written, {report.removed} removed; "
            f"store now matches {report.root}",
            err=True,
        )
    else:
        click.echo(f"imported full snapshot: {report.written} documents ({report.root})", err=True)


@snapshot.command()
@click.argument("a", type=ExistingFile)
@click.argument("b", type=ExistingFile)
@click.option("--content", is_flag=True, help="Add unified diffs of the changed Markdown.")
@click.option("--exit-code", is_flag=True, help="Exit 1 when the snapshots differ.")
@json_option
@click.pass_context
def diff(
    ctx: click.Context, a: Path, b: Path, content: bool, exit_code: bool, as_json: bool
) -> None:
    """List documents added, removed and changed from A to B."""
    from ..snapshots.diff import unified_content_diff

    left, right = Mirror.read_snapshot(a), Mirror.read_snapshot(b)
    result = Mirror.diff_snapshots(left, right)
    if as_json:
        click.echo(render.to_json(result.to_json()))
    else:
        for name in result.added:
            click.echo(f"added    {render.clean(name)}")
        for name in result.removed:
            click.echo(f"removed  {render.clean(name)}")
        for name, what in result.changed:
            click.echo(f"changed  {render.clean(name)} ({what})")
        if content:
            docs_a = {d.name: d for d in left.documents}
            docs_b = {d.name: d for d in right.documents}
            for name in [*result.added, *result.removed, *(n for n, _ in result.changed)]:
                text = unified_content_diff(docs_a.get(name), docs_b.get(name))
                click.echo(render.clean(text, multiline=True), nl=False)
    if exit_code and not result.empty:
        ctx.exit(1)


@snapshot.command()
@click.argument("file", type=ExistingFile)
@click.option(
    "--max-age",
    callback=duration,
    help="Also fail when the snapshot was written longer ago (e.g. 30d): its last git commit, "
    "or its modification time when git does not track it.",
)
@json_option
@global_options
@click.pass_context
def check(ctx: click.Context, file: Path, max_age: float | None, as_json: bool) -> None:
    """Ask upstream (metadata only) which pinned documents changed; exit 1 if any did."""
    report = open_mirror(ctx).check_snapshot(file, max_age=max_age)
    if as_json:
        click.echo(render.to_json(report.to_json()))
    else:
        for name in report.changed:
            click.echo(f"changed upstream  {render.clean(name)}")
        for name in report.removed:
            click.echo(f"gone upstream     {render.clean(name)}")
        click.echo(
            f"{len(report.changed)} changed, {len(report.removed)} gone of {report.pinned} "
            f"pinned; snapshot written {render.age(report.age_seconds)} ago "
            f"(by its {report.written_by}, which --max-age checks)"
            + (" - older than --max-age" if report.too_old else "")
            + f"; content as of {report.content_as_of or 'unknown'} (newest pinned updateTime)",
            err=True,
        )
    if not report.ok:
        ctx.exit(1)


@click.command()
@click.option(
    "--requirements", type=PathArg, default="dk-mirror.toml", show_default=True,
    help="The file listing the docs the project needs.",
)  # fmt: skip
@click.option(
    "--output", type=PathArg, default="dk-mirror.lock", show_default=True,
    help="The lock file to write (with --check: to check).",
)  # fmt: skip
@click.option(
    "--check", is_flag=True,
    help="Write nothing; exit 1 naming each difference if the lock no longer matches the "
    "requirements (no store, no network).",
)  # fmt: skip
@click.option(
    "--format", "form", type=click.Choice(["text", "json", "markdown"]), default=None,
    help="With --check: `markdown` also compares the lock with the store (synced, then "
    "refreshed) and prints what changed per page, fit for a pull-request comment.",
)  # fmt: skip
@json_option
@global_options
@click.pass_context
def lock(
    ctx: click.Context,
    requirements: Path,
    output: Path,
    check: bool,
    form: str | None,
    as_json: bool,
) -> None:
    """Resolve the docs a project needs (names, prefixes, searches) into a lock file to commit."""
    if form is not None and not check:
        raise click.UsageError("--format goes with --check (a lock is always written as text)")
    if as_json and form not in (None, "json"):
        raise click.UsageError(f"--json and --format {form} ask for two formats; give one")
    _need_requirements(requirements)
    if check and form == "markdown":
        _lock_changes(ctx, requirements, output)
        return
    if check:
        _check_lock(ctx, requirements, output, as_json or form == "json")
        return
    entries = open_mirror(ctx).lock(requirements, output)
    if as_json:
        click.echo(
            render.to_json({"path": str(output), "documents": [e.to_json() for e in entries]})
        )
    else:
        click.echo(f"locked {len(entries)} documents in {output}", err=True)


def _need_requirements(requirements: Path) -> None:
    """A usage error, in the user's terms, when the project's dk-mirror.toml is not there."""
    if requirements.is_file():
        return
    where = "is a folder" if requirements.is_dir() else "was not found"
    raise click.UsageError(
        f"{requirements} {where}: `dk-mirror lock` reads the docs your project needs from it; "
        'create it with e.g. `[docs]` and `names = ["developer.chrome.com/docs/x"]` or '
        "`prefixes = [...]` (README: Reproducible CI), or name another file with "
        "--requirements FILE"
    )


def _check_lock(ctx: click.Context, requirements: Path, lock_file: Path, as_json: bool) -> None:
    drift = Mirror.check_lock(requirements, lock_file)
    if as_json:
        click.echo(render.to_json(drift.to_json()))
    for line in drift.lines():
        click.echo(line, err=True)
    if not drift.recorded:
        click.echo(f"note: {lock_file} predates recorded requirements, so only missing names and "
                   "prefixes were checked; run `dk-mirror lock` to record them", err=True)  # fmt: skip
    if not drift.ok:
        click.echo(f"error: {lock_file} does not match {requirements}: run `dk-mirror lock` "
                   f"and commit {lock_file}", err=True)  # fmt: skip
        ctx.exit(1)
    if not as_json:
        click.echo(f"{lock_file} matches {requirements}", err=True)


def _lock_changes(ctx: click.Context, requirements: Path, lock_file: Path) -> None:
    """The pull-request summary: the store's pages against the lock, and the drift."""
    from ..snapshots.lock_report import markdown

    drift = Mirror.check_lock(requirements, lock_file)
    pages = open_mirror(ctx, readonly=True).lock_page_changes(lock_file)
    click.echo(markdown(pages, drift, lock_name=lock_file.name,
                        requirements_name=requirements.name), nl=False)  # fmt: skip
    if pages or not drift.ok:
        click.echo(f"{len(pages)} pinned page(s) differ from {lock_file}"
                   + ("" if drift.ok else f", and it does not match {requirements}"), err=True)  # fmt: skip
        ctx.exit(1)
    click.echo(f"{lock_file} matches the store and {requirements}", err=True)


@click.command()
@click.option("--locked", is_flag=True, required=True, help="Match the lock file exactly.")
@click.option("--lock", "lock_file", type=ExistingFile, default="dk-mirror.lock", show_default=True)
@click.option("--from", "source", type=ExistingFile, help="Take missing documents from a snapshot.")
@json_option
@global_options
@click.pass_context
def sync(
    ctx: click.Context, locked: bool, lock_file: Path, source: Path | None, as_json: bool
) -> None:
    """Make the store hold exactly the locked versions; exit 1 naming each that differs."""
    del locked  # required: the only sync mode, spelled out so CI scripts read clearly
    report = open_mirror(ctx).sync_locked(lock_file, source=source)
    if as_json:
        click.echo(render.to_json(report.to_json()))
    else:
        for mismatch in report.mismatches:
            click.echo(f"error: {render.clean(str(mismatch))}", err=True)
    if report.mismatches:
        click.echo(f"{len(report.mismatches)} of {report.locked} locked documents differ; "
                   "nothing was written", err=True)  # fmt: skip
        ctx.exit(1)
    click.echo(f"{report.locked} locked: {report.already} already exact, {report.written} written",
               err=True)  # fmt: skip


pin_commands = [snapshot, lock, sync]
