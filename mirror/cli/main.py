"""The `dk-mirror` command: parse options, call `Mirror`, render. Errors map to exit codes here.

Exit codes: 0 ok, 1 error, 2 usage or invalid input, 3 not found upstream, 4 not cached (offline),
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import click

from .. import interrupts
from ..errors import MirrorError, NotCached, NotFound
from ..files import cannot_write
from ..render import units

if TYPE_CHECKING:
    from ..models import Summary
from . import render
from .common import (
    as_of_option,
    duration,
    exit_failed,
    global_options,
    json_option,
    names_from_file,
    open_mirror,
    request_mode,
    warn_pruned,
    with_suggestions,
)

EXIT_NOT_FOUND = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C
# 128 + SIGPIPE, as shells report a command whose output's reader left (`ls | head -1`):
# Python ignores SIGPIPE, so the write fails instead of the process dying of it.
EXIT_BROKEN_PIPE = 141
# OSErrors that are the machine's state, not a bug: reported as one line, not a traceback.
OUTPUT_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


class Lazy(NamedTuple):
    """A command defined in another module, and the one line `--help` lists for it."""

    module: str
    attribute: str
    summary: str


# The commands of cli/search.py, ci.py, admin.py, history.py and serve.py, imported only when run: a
# cached `get` or `--help` then skips their imports (click's LazyGroup pattern). The summary
# is each command's short help; tests/test_cli.py checks it still matches the command's own.
LAZY = {
    "answer": Lazy(
        "search",
        "answer",
        "Answer a question (upstream AnswerQuery: 50/day; offline: recorded or extractive).",
    ),
    "changes": Lazy(
        "history",
        "changes",
        "List what changed in the store, newest first, each with the command showing its diff.",
    ),
    "crawl": Lazy(
        "crawl",
        "crawl",
        "Mirror a site: seeds, the pages they link to, and search results, breadth-first.",
    ),
    "db": Lazy(
        "admin",
        "db",
        "Schema migrations by hand (stores also upgrade when opened), and copying a store.",
    ),
    "demo": Lazy(
        "admin",
        "demo",
        "Mirror the sample documents (from upstream with a key, else the "
        "shipped copy), then read one offline.",
    ),
    "diff": Lazy(
        "history",
        "diff",
        "Print a unified diff of a document's Markdown between two kept versions.",
    ),
    "doctor": Lazy(
        "admin",
        "doctor",
        "Check SQLite, the store, the API key, and (unless --offline) one real upstream request.",
    ),
    "export": Lazy(
        "exports",
        "export",
        "Export the docs for other readers: md, site (with search), llms, docset (Dash/Zeal), zim.",
    ),
    "export-md": Lazy(
        "exports",
        "export_md",
        "The former name of `export md DIRECTORY`, kept so scripts keep working.",
    ),
    "history": Lazy(
        "history",
        "history",
        "List the kept versions of a document: number, updateTime, fetch time, sha256.",
    ),
    "import": Lazy(
        "admin",
        "import_",
        "Import Document records from FILE.jsonl[.gz] (one JSON object per line), all or nothing.",
    ),
    "index": Lazy(
        "index",
        "index",
        "The search indexes: bring the semantic one up to date, check them, or rebuild them.",
    ),
    "lock": Lazy(
        "ci",
        "lock",
        "Resolve the docs a project needs (names, prefixes, searches) into a lock file to commit.",
    ),
    "refresh": Lazy(
        "history",
        "refresh",
        "Bring stored documents up to date: compare updateTime (metadata only), refetch changes.",
    ),
    "search": Lazy(
        "search",
        "search",
        "Search the docs: upstream when online (recorded for replay), else offline.",
    ),
    "serve": Lazy(
        "serve", "serve", "Serve the mirror: MCP at /mcp, REST at /v1/, the docs browser at /."
    ),
    "snapshot": Lazy(
        "ci",
        "snapshot",
        "Pinned, hash-verified document sets: export, verify, import, diff, check.",
    ),
    "status": Lazy("admin", "status", "Counts, bytes, freshness, and where the store is."),
    "symbols": Lazy(
        "symbols",
        "symbols",
        "List the API symbols (methods, events, types...) the stored reference pages define.",
    ),
    "sync": Lazy(
        "ci",
        "sync",
        "Make the store hold exactly the locked versions; exit 1 naming each that differs.",
    ),
}


class Group(click.Group):
    """The `dk-mirror` group: maps dk-mirror errors to messages and exit codes, in one place,
    and loads the commands of other modules (LAZY) on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, the lazy ones included (without importing them)."""
        return sorted({*self.commands, *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command `cmd_name`, importing its module the first time it is asked for."""
        if cmd_name not in self.commands and cmd_name in LAZY:
            lazy = LAZY[cmd_name]
            module = importlib.import_module(f"{__package__}.{lazy.module}")
            self.add_command(getattr(module, lazy.attribute), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Click's, with "did you mean" drawn from every command: click suggests only from
        the commands loaded so far, which leaves out the lazy ones (`serach`)."""
        name = args[0] if args else ""
        unknown = name and not name.startswith("-") and not ctx.resilient_parsing
        if unknown and self.get_command(ctx, name) is None:
            from difflib import get_close_matches

            close = get_close_matches(name, self.list_commands(ctx))
            if close:
                raise click.UsageError(f"No such command {name!r}. Did you mean {close[0]!r}?", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List the commands for --help; a lazy command not yet loaded lists its summary."""
        listed = {
            name: self.commands.get(name) or click.Command(name, help=LAZY[name].summary)
            for name in self.list_commands(ctx)
        }
        rows = [(name, cmd) for name, cmd in listed.items() if not cmd.hidden]
        if rows:
            # Click's own layout (Group.format_commands), from the listing above.
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command, turning MirrorError into `error: ...` and its exit code."""
        try:
            return super().invoke(ctx)
        except MirrorError as exc:
            # Messages quote names and problems from files and the store: escape them.
            click.echo(f"error: {render.clean(str(exc), multiline=True)}", err=True)
            ctx.exit(exc.exit_code)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                # The reader of the output went away (`| head`): nothing is wrong, and no one
                # reads what else would be said; quiet, as a Unix tool dies of SIGPIPE. (Click
                # would exit 1 without a word.)
                _output_gone()
                ctx.exit(EXIT_BROKEN_PIPE)
            if exc.errno not in OUTPUT_FAILURES:
                raise
            # Files the user names are written through files.atomic_file, which says which;
            # what is left is the output itself (`ls > file` on a full disk).
            error = cannot_write(exc.filename or "the output", exc)
            click.echo(f"error: {render.clean(str(error), multiline=True)}", err=True)
            ctx.exit(error.exit_code)
        except KeyboardInterrupt as exc:
            # Not click's "Aborted!" and exit 1: every write is one transaction, so nothing
            # half-done is left, and the shell convention says how the run ended.
            from .embedding import interrupted_note

            click.echo(interrupted_note(exc) or "interrupted", err=True)
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
@as_of_option
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
    if mirror.as_of is not None and (refresh or max_age is not None):
        raise click.UsageError(
            "--as-of reads the store's past, which is never fetched: drop --refresh and --max-age"
        )
    mode = request_mode(mirror, max_age=max_age, refresh=refresh)
    try:
        # --json prints the documents there are and names the rest; text is all or nothing.
        result = mirror.get_documents(list(names), mode, partial=as_json)
    except (NotFound, NotCached) as exc:
        raise with_suggestions(mirror, exc, names) from None
    for warning in result.warnings:
        click.echo(f"warning: {render.clean(warning, multiline=True)}", err=True)
    if as_json:
        click.echo(render.to_json(result.to_json()))
        if result.error is not None:
            raise with_suggestions(mirror, result.error, names)
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
    from ..service import FetchInterrupted
    from .embedding import embedding_shown, interrupted_note
    from .progress import Bar

    wanted = list(names) + (names_from_file(names_file) if names_file else [])
    if not wanted:
        raise click.UsageError("give document names or --names-file")
    mirror = open_mirror(ctx)
    try:
        with embedding_shown(mirror, bar=False), Bar("fetching") as progress:
            mode = request_mode(mirror, max_age=max_age, refresh=refresh)
            report = mirror.fetch(wanted, mode, progress)
    except FetchInterrupted as stop:
        done = stop.report
        if as_json:
            click.echo(render.to_json(done.to_json()))
        if refresh:
            # Every name was asked for again, so a rerun starts over; --max-age skips
            # the copies this run just refetched.
            said = (
                f"{done.fetched} of {done.requested} refetched and saved; the same command "
                f"refetches all {done.requested} again (--max-age 1h instead of --refresh "
                "skips these)"
            )
        else:
            said = (
                f"{done.fetched} document(s) saved, "
                f"{done.already_cached + done.fetched} of {done.requested} now in the store; "
                "run the same command again to fetch only the rest"
            )
        click.echo(f"interrupted: {said}", err=True)
        if note := interrupted_note(stop):
            click.echo(note, err=True)
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
        exit_failed(
            ctx,
            stopped=report.stopped,
            error=report.error,
            advice=f"{len(report.failed)} document(s) were not fetched; run the same command "
            "again to fetch only what is still missing",
        )
    if report.missing:
        ctx.exit(EXIT_NOT_FOUND)


@cli.command(name="ls")
@click.option("--prefix", help="Only names starting with this (any name form).")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@as_of_option
@json_option
@global_options
@click.pass_context
def ls(ctx: click.Context, prefix: str | None, limit: int | None, as_json: bool) -> None:
    """List cached documents by name (NDJSON with --json).

    Names seen only in search results are listed as "metadata only" (hasContent false):
    they are known to exist but cannot be read until fetched.
    """
    mirror = open_mirror(ctx, readonly=True)
    warn_pruned(mirror, prefix)
    items = mirror.list_documents(prefix, limit)
    if as_json:
        for item in items:
            click.echo(render.to_json_line(item.to_json()))
        return
    # Streamed like --json: `ls | head` prints at once, whatever the size of the store.
    printed = False
    for line in render.table_lines(_ls_rows(items)):
        click.echo(line)
        printed = True
    if not printed:
        click.echo("no documents" + (f" under {render.clean(prefix)}" if prefix else ""), err=True)


def _ls_rows(items: Iterable[Summary]) -> Iterator[tuple[str, str, str]]:
    from ..search.snippets import title_text

    for item in items:
        # A row seen only in search results cannot be read: say so where the size would be.
        size = units.size(item.content_length_bytes) if item.has_content else "metadata only"
        # The title as text, as search shows it (`&nbsp;` and backticks are not shown), its
        # control characters left for the table to show escaped.
        yield (item.name, size, title_text(item.title or ""))


def main() -> None:
    """Console entry point."""
    _on_ctrl_c()
    try:
        cli(prog_name="dk-mirror")
    except SystemExit as end:
        if interrupts.stop_requested():
            # Ctrl-C: what was finished is committed (each command saw to that before it
            # exited). Worker threads still waiting for an answer upstream are abandoned, not
            # waited for (the interpreter would join them): the next run asks again.
            _leave(end.code if isinstance(end.code, int) else EXIT_INTERRUPTED)
        raise


def _on_ctrl_c() -> None:
    """Ctrl-C says "stopping..." at once and stops every wait (interrupts.py); a second one
    exits at once. Only where Ctrl-C would interrupt anyway: a run started in the background
    inherits SIGINT ignored, and stays so."""
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return

    def handler(signum: int, frame: object) -> None:
        if interrupts.stop_requested():
            # The first one is still being wound up: the user wants out now. Every write is
            # one transaction, so the store is as sound as after a kill; what was being
            # written is not.
            os.write(2, b"\ninterrupted again: exiting now\n")
            os._exit(EXIT_INTERRUPTED)
        interrupts.request_stop()
        # os.write, not click.echo: a signal handler may run in the middle of a write to
        # sys.stderr, and the buffered stream refuses a write from within itself.
        os.write(2, b"\nstopping... (Ctrl-C again to quit at once)\n")
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)


def _output_gone() -> None:
    """Standard output pointed at /dev/null: what is still buffered for the pipe whose
    reader left is dropped at exit, not written again (the interpreter would print "Exception
    ignored ... BrokenPipeError")."""
    with contextlib.suppress(OSError, ValueError):
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, sys.stdout.fileno())
        os.close(quiet)


def _leave(code: int) -> None:
    """Exit now with `code`, output flushed, without waiting for threads still running; a
    dense-ranking helper process (service/forked_dense.py) is killed and reaped first."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    forked = sys.modules.get("mirror.service.forked_dense")  # loaded when one was forked
    if forked is not None:
        with contextlib.suppress(Exception):
            forked.dismiss_all()
    os._exit(code)
