"""`dk-mirror export FORMAT OUT` (md, site, llms, ...) and the older `export-md DIRECTORY`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..exports import formats
from . import render
from .common import as_of_option, global_options, json_option, open_mirror, warn_pruned
from .progress import Bar

Folder = click.Path(path_type=Path, file_okay=False)
# A folder, or the file of a one-file format (zim); the export itself says which it needs.
Out = click.Path(path_type=Path)


def _format_options(func: Any) -> Any:
    # Each format's own options, listed in exports/formats.py, become options of `export`.
    for spec in reversed(formats.SPECS):
        for option in reversed(spec.options):
            func = click.option(
                option.flag, option.key, type=option.kind, default=None, help=option.help
            )(func)
    return func


@click.command(name="export")
@click.argument("format_name", metavar="FORMAT", type=click.Choice(sorted(formats.BY_NAME)))
@click.argument("out", type=Out)
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option(
    "--lock",
    "lock_file",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Exactly the documents (and versions) of a lock file.",
)
@_format_options
@as_of_option
@json_option
@global_options
@click.pass_context
def export(
    ctx: click.Context,
    /,
    format_name: str,
    out: Path,
    prefix: str | None,
    lock_file: Path | None,
    as_json: bool,
    **given: Any,
) -> None:
    """Export the docs for other readers: md, site (with search), llms, docset (Dash/Zeal), zim.

    Re-running rewrites only the files whose bytes changed and removes the files of pages no
    longer selected (only files an export wrote). For zim, OUT is one .zim file, rewritten
    only when its pages changed."""
    spec = formats.spec(format_name)
    own = {option.key: option for option in spec.options}
    for key, value in given.items():
        if value is not None and key not in own:
            flag = next(o.flag for s in formats.SPECS for o in s.options if o.key == key)
            raise click.UsageError(f"{flag} is not an option of `export {format_name}`")
    options = {key: option.default for key, option in own.items()}
    options.update({k: v for k, v in given.items() if v is not None and k in own})
    mirror = open_mirror(ctx, readonly=True)
    warn_pruned(mirror, prefix)
    with Bar(f"export {format_name}", unit="page") as progress:
        report = mirror.export(
            format_name, out, prefix=prefix, lock=lock_file, options=options, progress=progress
        )
    if as_json:
        click.echo(render.to_json(report.to_json()))
        return
    for note in report.notes:
        click.echo(f"note: {render.clean(note)}", err=True)
    click.echo(
        f"exported {report.pages} pages as {format_name} to {out}: {report.written} files "
        f"written, {report.unchanged} unchanged, {report.removed} removed",
        err=True,
    )


@click.command(name="export-md")
@click.argument("directory", type=Folder)
@click.option("--prefix", help="Only names starting with this (any name form).")
@as_of_option
@json_option
@global_options
@click.pass_context
def export_md(ctx: click.Context, directory: Path, prefix: str | None, as_json: bool) -> None:
    """The former name of `export md DIRECTORY`, kept so scripts keep working."""
    mirror = open_mirror(ctx, readonly=True)
    warn_pruned(mirror, prefix)
    report = mirror.export("md", directory, prefix=prefix)
    if as_json:
        shown = {"directory": str(directory), "documents": report.pages, **report.to_json()}
        click.echo(render.to_json(shown))
    else:
        click.echo(f"wrote {report.pages} documents and index.md under {directory}", err=True)
