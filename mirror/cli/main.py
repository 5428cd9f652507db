"""The `dk-mirror` command: parse options, call `Mirror`, render. Errors map to exit codes here.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 not found upstream, 4 not cached (offline).
"""

from __future__ import annotations

from typing import Any

import click

from ..errors import MirrorError
from . import render
from .admin import admin_commands
from .ci import pin_commands
from .common import Progress, duration, global_options, json_option, open_mirror
from .search import search_commands
from .serve import serve

EXIT_NOT_FOUND = 3


class Group(click.Group):
    """Maps dk-mirror errors to messages and exit codes, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command, turning MirrorError into `error: ...` and its exit code."""
        try:
            return super().invoke(ctx)
        except MirrorError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@global_options
@click.version_option(package_name="dk-mirror")
def cli() -> None:
    """A caching, offline mirror of Google's Developer Knowledge API.

    Documents are kept in a local store (SQLite by default) and served from it before the
    network is used. Set DEVELOPER_KNOWLEDGE_API_KEY to fetch from Google.
    """


@cli.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--max-age", callback=duration, help="Refetch copies older than this (e.g. 7d).")
@click.option("--refresh", is_flag=True, help="Fetch from upstream even if cached.")
@json_option
@global_options
@click.pass_context
def get(
    ctx: click.Context, names: tuple[str, ...], max_age: float | None, refresh: bool, as_json: bool
) -> None:
    """Print documents (Markdown), from the store first, fetching what is missing.

    NAME may be documents/HOST/PATH, https://HOST/PATH or HOST/PATH; at most 20.
    """
    mirror = open_mirror(ctx, readonly=None)  # writes only what it fetches
    result = mirror.get_documents(list(names), max_age=max_age, refresh=refresh)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        out = result.to_api()
        out["_mirror"] = {
            "served": [
                {"name": s.name, "source": s.source, "fetchedAt": s.fetched_at}
                for s in result.served
            ]
        }
        click.echo(render.to_json(out))
        return
    for i, doc in enumerate(result.documents):
        if len(result.documents) > 1:
            click.echo(("\n" if i else "") + f"<!-- {doc.name} -->")
        click.echo(doc.content or "", nl=not (doc.content or "").endswith("\n"))


@cli.command()
@click.argument("names", nargs=-1)
@click.option(
    "--names-file",
    type=click.File("r", encoding="utf-8"),
    help="File with one name per line ('-' for stdin); '#' starts a comment.",
)
@click.option("--max-age", callback=duration, help="Refetch copies older than this (e.g. 7d).")
@click.option("--refresh", is_flag=True, help="Fetch even documents already cached.")
@json_option
@global_options
@click.pass_context
def fetch(
    ctx: click.Context,
    names: tuple[str, ...],
    names_file: Any,
    max_age: float | None,
    refresh: bool,
    as_json: bool,
) -> None:
    """Mirror any number of documents into the store, in batches of 20."""
    from ..names import read_names

    wanted = list(names) + (read_names(names_file) if names_file else [])
    if not wanted:
        raise click.UsageError("give document names or --names-file")
    mirror = open_mirror(ctx)
    with Progress("fetching") as progress:
        report = mirror.fetch(wanted, refresh=refresh, max_age=max_age, progress=progress)
    summary = {
        "requested": report.requested,
        "alreadyCached": report.already_cached,
        "fetched": report.fetched,
        "missing": report.missing,
        "error": report.error.message if report.error else None,
    }
    if as_json:
        click.echo(render.to_json(summary))
    else:
        click.echo(
            f"{report.fetched} fetched, {report.already_cached} already cached, "
            f"{len(report.missing)} not found upstream (of {report.requested})",
            err=True,
        )
        for name in report.missing:
            click.echo(f"not found: {name}", err=True)
    if report.error:
        raise report.error
    if report.missing:
        ctx.exit(EXIT_NOT_FOUND)


@cli.command(name="ls")
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@json_option
@global_options
@click.pass_context
def ls(ctx: click.Context, prefix: str | None, limit: int | None, as_json: bool) -> None:
    """List cached documents by name (NDJSON with --json)."""
    mirror = open_mirror(ctx, readonly=True)
    rows = []
    for item in mirror.list_documents(prefix, limit):
        if as_json:
            click.echo(
                render.to_json_line(
                    {
                        "name": item.name,
                        "title": item.title,
                        "dataSource": item.data_source,
                        "updateTime": item.update_time,
                        "contentLengthBytes": item.content_length_bytes,
                        "hasContent": item.has_content,
                        "fetchedAt": item.fetched_at,
                    }
                )
            )
        else:
            rows.append((item.name, render.size(item.content_length_bytes), item.title or ""))
    if not as_json:
        if rows:
            click.echo(render.table(rows))
        else:
            click.echo("no documents" + (f" under {prefix}" if prefix else ""), err=True)


for command in [*search_commands, *pin_commands, *admin_commands]:
    cli.add_command(command)
cli.add_command(serve)


def main() -> None:
    """Console entry point."""
    cli(prog_name="dk-mirror")
