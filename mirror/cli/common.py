"""Pieces every command shares: global options, --json, opening the Mirror, durations."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from ..config import Settings, parse_duration
from ..errors import InvalidInput
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


def open_mirror(ctx: click.Context, *, readonly: bool | None = False) -> Mirror:
    """A Mirror for the settings given by options and environment.

    `readonly`: the command only reads the store, so it opens it read-only (a read-only file,
    folder or mount works) and a missing store is an error rather than a new empty one.
    None: read-only exactly when offline (a command that writes only what it fetches).
    """
    given = ctx.ensure_object(dict)
    settings = Settings.resolve(
        db=given.get("db"),
        upstream=given.get("upstream"),
        transport=given.get("transport"),
        offline=given.get("offline"),
        strict_offline=given.get("strict_offline"),
    )
    mirror = Mirror(settings, readonly=settings.offline if readonly is None else readonly)
    ctx.call_on_close(mirror.close)
    return mirror


def duration(_ctx: click.Context, _param: click.Parameter, value: str | None) -> float | None:
    """Click callback: parse `--max-age 7d` into seconds."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message) from None


class Progress:
    """A progress bar on a terminal; silence elsewhere (logs and CI stay clean)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.bar: Any = None
        self.done = 0

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def update(self, done: int, total: int) -> None:
        """Advance the bar to `done` of `total`."""
        if not sys.stderr.isatty():
            return
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
