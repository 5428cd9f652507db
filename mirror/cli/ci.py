"""Commands for reproducible CI: `snapshot ...`, `lock`, `sync --locked`, `export-md`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from . import render
from .common import duration, global_options, json_option, open_mirror

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
    from ..names import read_names
    from ..service import prefix_form

    mirror = open_mirror(ctx, readonly=True)
    manifest = mirror.export_snapshot(
        out,
        prefix=prefix_form(prefix) if prefix else None,
        data_source=data_source,
        names=read_names(names_file) if names_file else None,
        lock=lock_file,
        since=since,
    )
    summary = {"path": str(out), "kind": manifest.kind, "count": manifest.count,
               "root": manifest.root, "base": manifest.base}  # fmt: skip
    if as_json:
        click.echo(render.to_json(summary))
    else:
        click.echo(
            f"wrote {manifest.kind} snapshot {out}: {manifest.count} entries, {manifest.root}"
        )


@snapshot.command()
@click.argument("file", type=ExistingFile)
@json_option
@click.pass_context
def verify(ctx: click.Context, file: Path, as_json: bool) -> None:
    """Recompute every hash offline; exit 1 naming each document that does not match."""
    from ..snapshots.read import verify as run_verify

    report = run_verify(file)
    if as_json:
        click.echo(render.to_json(report.to_json()))
    elif report.ok and report.manifest:
        click.echo(f"ok: {report.manifest.count} entries, {report.manifest.root}")
    for problem in report.problems:
        click.echo(f"error: {problem}", err=True)
    if not report.ok:
        ctx.exit(1)


@snapshot.command(name="import")
@click.argument("file", type=ExistingFile)
@global_options
@click.pass_context
def import_(ctx: click.Context, file: Path) -> None:
    """Verify FILE, then write it into the store all or nothing (a delta needs its base)."""
    mirror = open_mirror(ctx)
    report = mirror.import_snapshot(file)
    click.echo(
        f"imported {report.kind} snapshot: {report.written} written, {report.removed} removed; "
        f"store now matches {report.root}" if report.kind == "delta" else
        f"imported {report.kind} snapshot: {report.written} documents ({report.root})",
        err=True,
    )  # fmt: skip


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
    from ..snapshots.diff import diff as compare
    from ..snapshots.diff import unified_content_diff
    from ..snapshots.read import read

    left, right = read(a), read(b)
    result = compare(left, right)
    if as_json:
        click.echo(render.to_json(result.to_json()))
    else:
        for name in result.added:
            click.echo(f"added    {name}")
        for name in result.removed:
            click.echo(f"removed  {name}")
        for name, what in result.changed:
            click.echo(f"changed  {name} ({what})")
        if content:
            docs_a = {d.name: d for d in left.documents}
            docs_b = {d.name: d for d in right.documents}
            for name in [*result.added, *result.removed, *(n for n, _ in result.changed)]:
                click.echo(unified_content_diff(docs_a.get(name), docs_b.get(name)), nl=False)
    if exit_code and not result.empty:
        ctx.exit(1)


@snapshot.command()
@click.argument("file", type=ExistingFile)
@click.option(
    "--max-age", callback=duration, help="Also fail when the snapshot is older (e.g. 30d)."
)
@json_option
@global_options
@click.pass_context
def check(ctx: click.Context, file: Path, max_age: float | None, as_json: bool) -> None:
    """Ask upstream (metadata only) which pinned documents changed; exit 1 if any did."""
    mirror = open_mirror(ctx)
    report = mirror.check_snapshot(file, max_age=max_age)
    if as_json:
        click.echo(render.to_json({
            "pinned": report.pinned, "changed": report.changed, "removed": report.removed,
            "ageSeconds": report.age_seconds, "tooOld": report.too_old, "ok": report.ok,
        }))  # fmt: skip
    else:
        for name in report.changed:
            click.echo(f"changed upstream  {name}")
        for name in report.removed:
            click.echo(f"gone upstream     {name}")
        click.echo(
            f"{len(report.changed)} changed, {len(report.removed)} gone of {report.pinned} "
            f"pinned; snapshot age {render.age(report.age_seconds)}"
            + (" (older than --max-age)" if report.too_old else ""),
            err=True,
        )
    if not report.ok:
        ctx.exit(1)


@click.command()
@click.option("--requirements", type=ExistingFile, default="dk-mirror.toml", show_default=True)
@click.option("--output", type=PathArg, default="dk-mirror.lock", show_default=True)
@global_options
@click.pass_context
def lock(ctx: click.Context, requirements: Path, output: Path) -> None:
    """Resolve the docs a project needs (names, prefixes, searches) into a lock file to commit."""
    from ..service.ci import write_atomic
    from ..snapshots.lockfile import write_lock

    mirror = open_mirror(ctx)
    entries = mirror.lock(requirements)
    write_atomic(output, write_lock(entries))
    click.echo(f"locked {len(entries)} documents in {output}", err=True)


@click.command()
@click.option("--locked", is_flag=True, required=True, help="Match the lock file exactly.")
@click.option("--lock", "lock_file", type=ExistingFile, default="dk-mirror.lock", show_default=True)
@click.option("--from", "source", type=ExistingFile, help="Take missing documents from a snapshot.")
@global_options
@click.pass_context
def sync(ctx: click.Context, locked: bool, lock_file: Path, source: Path | None) -> None:
    """Make the store hold exactly the locked versions; exit 1 naming each that differs."""
    del locked  # required: the only sync mode, spelled out so CI scripts read clearly
    mirror = open_mirror(ctx)
    report = mirror.sync_locked(lock_file, source=source)
    for mismatch in report.mismatches:
        click.echo(f"error: {mismatch}", err=True)
    if report.mismatches:
        click.echo(f"{len(report.mismatches)} of {report.locked} locked documents differ; "
                   "nothing was written", err=True)  # fmt: skip
        ctx.exit(1)
    click.echo(f"{report.locked} locked: {report.already} already exact, {report.written} written",
               err=True)  # fmt: skip


@click.command(name="export-md")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option("--prefix", help="Only names starting with this (any name form).")
@global_options
@click.pass_context
def export_md(ctx: click.Context, directory: Path, prefix: str | None) -> None:
    """Write one .md file per document (front matter + Markdown) and an index.md."""
    from ..service import prefix_form

    mirror = open_mirror(ctx, readonly=True)
    count = mirror.export_markdown(directory, prefix=prefix_form(prefix) if prefix else None)
    click.echo(f"wrote {count} documents and index.md under {directory}", err=True)


pin_commands = [snapshot, lock, sync, export_md]
