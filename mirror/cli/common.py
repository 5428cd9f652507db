"""Pieces every command shares: global options, --json, opening the Mirror, durations."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .. import config, interrupts
from ..config import DEFAULT_MAX_DOCUMENT_BYTES, ENV_MAX_DOCUMENT_BYTES, MIN_DOCUMENT_BYTES

if TYPE_CHECKING:
    from ..errors import NotCached, NotFound
    from ..policy import Mode
    from ..service import Mirror

F = TypeVar("F", bound=Callable[..., Any])


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    # Global options may come before or after the subcommand; whichever is given is kept.
    if value is not None and value is not False:
        ctx.ensure_object(dict)[param.name] = value


def global_options(func: F) -> F:
    """Options every command accepts, before or after the subcommand name."""
    options = [
        click.option(
            "--db",
            metavar="PATH|URL",
            expose_value=False,
            callback=_remember,
            help="SQLite file or SQLAlchemy URL of the store [env DK_MIRROR_DB].",
        ),
        click.option(
            "--upstream",
            metavar="URL",
            expose_value=False,
            callback=_remember,
            help="Upstream base URL: Google's API or another dk-mirror [env DK_MIRROR_UPSTREAM].",
        ),
        click.option(
            "--transport",
            type=click.Choice(["rest", "mcp"]),
            expose_value=False,
            callback=_remember,
            help="Talk to upstream over REST v1 or MCP [env DK_MIRROR_TRANSPORT].",
        ),
        click.option(
            "--offline",
            is_flag=True,
            default=None,
            expose_value=False,
            callback=_remember,
            help="Never touch the network; serve only the store [env DK_MIRROR_OFFLINE=1].",
        ),
        click.option(
            "--strict-offline",
            is_flag=True,
            default=None,
            expose_value=False,
            callback=_remember,
            help="Offline, and any attempt to reach the network is an error "
            "[env DK_MIRROR_STRICT_OFFLINE=1].",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def json_option(func: F) -> F:
    """`--json`: machine-readable output instead of text."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def max_document_option(func: F) -> F:
    """`--max-document-bytes`: the largest document record a file may hold."""
    return click.option(
        "--max-document-bytes",
        type=click.IntRange(min=MIN_DOCUMENT_BYTES),
        metavar="BYTES",
        expose_value=False,
        callback=_remember,
        help=f"Refuse a file holding a document record larger than this "
        f"[default {DEFAULT_MAX_DOCUMENT_BYTES}; env {ENV_MAX_DOCUMENT_BYTES}].",
    )(func)


def keep_versions_option(help_text: str) -> Callable[[F], F]:
    """`--keep-versions N`: how many versions of each document the history keeps."""
    return click.option(
        "--keep-versions",
        type=click.IntRange(min=1),
        metavar="N",
        expose_value=False,
        callback=_remember,
        help=f"{help_text} [env {config.ENV_KEEP_VERSIONS}; default "
        f"{config.DEFAULT_KEEP_VERSIONS}].",
    )


def _as_of(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    # Kept for open_mirror, which opens the store as it was then for every command alike.
    if value is None:
        return
    import time

    from ..errors import InvalidInput
    from ..timestamps import parse_instant

    try:
        ctx.ensure_object(dict)["as_of"] = parse_instant(value, time.time())
    except InvalidInput as exc:
        raise click.BadParameter(f"{exc.message} ({exc.hint})") from None


def as_of_option(func: F) -> F:
    """`--as-of DATE`: answer as the store was then, from its kept history (read-only)."""
    return click.option(
        "--as-of",
        metavar="DATE",
        expose_value=False,
        callback=_as_of,
        help="Answer as the store was at DATE (2026-01-02, 2026-01-02T15:04:05Z, or 7d ago), "
        "from the versions it kept: pages fetched later are absent, and a page whose version "
        "of then was pruned says so.",
    )(func)


def warn_pruned(mirror: Mirror, prefix: str | None = None) -> None:
    """As of a past time, say which pages were left out because their version of then was
    pruned from the history (a listing or export must not pass for complete)."""
    if mirror.as_of is None:
        return
    from . import render

    pruned = mirror.pruned_then(prefix)
    if pruned:
        shown = ", ".join(render.clean(n) for n in pruned[:5]) + (" ..." if len(pruned) > 5 else "")
        click.echo(
            f"warning: {len(pruned)} document(s) left out: their version of then was pruned "
            f"from the history ({shown})",
            err=True,
        )


def document_limit(ctx: click.Context) -> int:
    """The document size limit from --max-document-bytes, the environment or the default."""
    return config.document_limit(os.environ, ctx.ensure_object(dict).get("max_document_bytes"))


def open_mirror(
    ctx: click.Context,
    *,
    upgrade: bool = True,
    readonly: bool | None = False,
    read_only_ok: bool = False,
) -> Mirror:
    """A Mirror for the settings given by options and environment.

    `upgrade`: migrate the store when it is opened (`doctor` looks without changing it).
    `readonly`: the command only reads the store, so it opens it read-only (a read-only file,
    folder or mount works), a missing store is an error rather than a new empty one, and an
    existing SQLite store is read without loading SQLAlchemy. None: read-only exactly when
    offline (a command that writes only what it fetches). `read_only_ok`: a store that
    exists but cannot be written is opened read-only (`serve` without --allow-fetch).
    """
    # Imported here (as in the functions below): --help and usage errors then never load
    # the settings, the service and its models.
    from ..config import Settings
    from ..service import Mirror

    given = ctx.ensure_object(dict)
    settings = Settings.resolve(
        db=given.get("db"),
        upstream=given.get("upstream"),
        transport=given.get("transport"),
        offline=given.get("offline"),
        strict_offline=given.get("strict_offline"),
        max_document_bytes=given.get("max_document_bytes"),
        keep_versions=given.get("keep_versions"),
    )
    only_reads = settings.offline if readonly is None else readonly
    # Offline, a command cannot fetch, so it (nearly always) only reads: a local import
    # still writes, through the full Store the Reader opens for it.
    as_of = given.get("as_of")
    mirror = Mirror(
        settings,
        upgrade=upgrade,
        readonly=only_reads,
        reader=only_reads or settings.offline or as_of is not None,
        read_only_ok=read_only_ok,
        as_of=as_of,
    )

    def close() -> None:
        # After Ctrl-C the process exits without the tidy close: that would first bring the
        # search index up to date, which after an interrupted import means undoing in the
        # index every page the import had reached (as long as the import took). Every write
        # is one transaction and the index catches up from the store's change log when the
        # store is next opened, as after a kill.
        if not interrupts.stop_requested():
            mirror.close()

    ctx.call_on_close(close)
    return mirror


def request_mode(mirror: Mirror, *, max_age: float | None = None, refresh: bool = False) -> Mode:
    """The caching mode of a CLI command: settings, then its --max-age and --refresh (the one
    place the CLI builds it)."""
    from ..policy import Mode

    settings = mirror.settings
    return Mode(
        offline=settings.offline,
        max_age=settings.max_age if max_age is None else max_age,
        refresh=refresh,
    )


def names_from_file(file: Any) -> list[str]:
    """The names in a names file (click.File); a usage error when it holds none."""
    from ..names import read_names

    names = read_names(file)
    if not names:
        where = "stdin" if file.name in ("-", "<stdin>") else file.name
        raise click.UsageError(
            f"the names file {where} has no names (only blank lines and '#' comments): "
            "put one document name per line"
        )
    return names


# Suggestions are looked up for at most this many missing names (each is a store query).
SUGGEST_FOR = 3


def with_suggestions(
    mirror: Mirror, error: NotFound | NotCached, asked: Sequence[str]
) -> NotFound | NotCached:
    """`error` (NotFound or NotCached) with the nearest cached documents added to its hint,
    as the server's 404 names them."""
    from ..errors import InvalidInput
    from ..names import normalize_all

    try:
        exclude = sorted(normalize_all(asked))
    except InvalidInput:
        exclude = []
    lines: list[str] = []
    for name in error.names[:SUGGEST_FOR]:
        # A name the caller asked for is no news to them, even if cached.
        close = mirror.suggest_names(name, limit=3, exclude=exclude)
        if close:
            lines.append(f"nearest cached to {name}: {', '.join(close)}")
    if lines:
        error.hint = "\n  ".join(filter(None, [error.hint, *lines]))
    return error


def duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    """Click callback: parse `--max-age 7d` into seconds."""
    if value is None:
        return None
    from ..config import parse_duration
    from ..errors import InvalidInput

    try:
        return parse_duration(value)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message) from None


def exit_failed(ctx: click.Context, *, stopped: str | None, error: object, advice: str) -> None:
    """The end of a fetch, crawl or refresh that left documents behind: why it stopped, the
    last error, how to go on (`advice`); exit 1. The failed names were listed already."""
    from . import render

    if stopped:
        click.echo(f"stopped early: {render.clean(stopped)}", err=True)
    if error:
        click.echo(f"error: {render.clean(str(error), multiline=True)}", err=True)
    click.echo(f"error: {advice}", err=True)
    ctx.exit(1)
