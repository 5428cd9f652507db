"""The `dk-mirror` command: parse options, call `Mirror`, render. Errors map to exit codes here.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 not found upstream, 4 not cached (offline),
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..errors import MirrorError
from . import render
from .admin import admin_commands
from .ci import pin_commands
from .common import Progress, duration, global_options, json_option, open_mirror, request_mode
from .search import search_commands
from .serve import serve

EXIT_NOT_FOUND = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C


class Group(click.Group):
    """Maps dk-mirror errors to messages and exit codes, in one place."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command, turning MirrorError into `error: ...` and its exit code."""
        try:
            return super().invoke(ctx)
        except MirrorError as exc:
            # Messages quote names and problems from files and the store: escape them.
            click.echo(f"error: {render.clean(str(exc), multiline=True)}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            # Not click's "Aborted!" and exit 1: every write is one transaction, so nothing
            # half-done is left, and the shell convention says how the run ended.
            click.echo("interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


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
    mirror = open_mirror(ctx)
    result = mirror.get_documents(
        list(names), request_mode(mirror, max_age=max_age, refresh=refresh)
    )
    for warning in result.warnings:
        click.echo(f"warning: {render.clean(warning, multiline=True)}", err=True)
    if as_json:
        out = result.to_api()
        out["_mirror"] = {"served": [s.to_json() for s in result.served]}
        click.echo(render.to_json(out))
        return
    # Piped, the Markdown goes out byte for byte; on a terminal its control characters are
    # escaped, so a stored page cannot drive the terminal.
    tty = sys.stdout.isatty()
    for i, doc in enumerate(result.documents):
        if len(result.documents) > 1:
            click.echo(("\n" if i else "") + f"<!-- {render.clean(doc.name)} -->")
        content = doc.content or ""
        click.echo(render.clean(content, multiline=True) if tty else content,
                   nl=not content.endswith("\n"))  # fmt: skip


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
    from ..service import FetchInterrupted

    wanted = list(names) + (read_names(names_file) if names_file else [])
    if not wanted:
        raise click.UsageError("give document names or --names-file")
    mirror = open_mirror(ctx)
    try:
        with Progress("fetching") as progress:
            mode = request_mode(mirror, max_age=max_age, refresh=refresh)
            report = mirror.fetch(wanted, mode, progress)
    except FetchInterrupted as stop:
        done = stop.report
        if as_json:
            click.echo(render.to_json(done.to_json()))
        click.echo(
            f"interrupted: {done.fetched} document(s) saved, "
            f"{done.already_cached + done.fetched} of {done.requested} now in the store; "
            "run the same command again to fetch only the rest",
            err=True,
        )
        ctx.exit(EXIT_INTERRUPTED)
    if as_json:
        click.echo(render.to_json(report.to_json()))
    else:
        click.echo(
            f"{report.fetched} fetched, {report.already_cached} already cached, "
            f"{len(report.missing)} not found upstream, {len(report.failed)} failed "
            f"(of {report.requested})",
            err=True,
        )
        for name in report.missing:
            click.echo(f"not found: {render.clean(name)}", err=True)
        for name in report.failed:
            click.echo(f"failed: {render.clean(name)}", err=True)
    if report.failed:
        # The names are listed above; the error says why, the hint how to go on.
        if report.stopped:
            click.echo(f"stopped early: {report.stopped}", err=True)
        if report.error:
            click.echo(f"error: {report.error}", err=True)
        click.echo(
            f"error: {len(report.failed)} document(s) were not fetched; run the same command "
            "again to fetch only what is still missing",
            err=True,
        )
        ctx.exit(1)
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
    mirror = open_mirror(ctx)
    rows = []
    for item in mirror.list_documents(prefix, limit):
        if as_json:
            click.echo(render.to_json_line(item.to_json()))
        else:
            rows.append((item.name, render.size(item.content_length_bytes), item.title or ""))
    if not as_json:
        if rows:
            click.echo(render.table(rows))
        else:
            click.echo(
                "no documents" + (f" under {render.clean(prefix)}" if prefix else ""), err=True
            )


for command in [*search_commands, *pin_commands, *admin_commands]:
    cli.add_command(command)
cli.add_command(serve)


def main() -> None:
    """Console entry point."""
    cli(prog_name="dk-mirror")
