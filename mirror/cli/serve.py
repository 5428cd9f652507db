"""`dk-mirror serve`: the mirror as an MCP server (stdio or HTTP), a REST API and a browser.

The web stack (mcp, starlette, uvicorn) is imported inside the command, so every other
command starts without it.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click

from ..config import ENV_SERVE_TOKEN
from ..errors import ConfigError
from ..serve.options import DEFAULT_HOST, DEFAULT_PORT, MODES, ServeMode, ServeOptions
from .common import as_of_option, global_options, open_mirror

log = logging.getLogger("mirror.serve")


@click.command()
@click.option("--stdio", is_flag=True, help="Speak MCP over stdin/stdout (an agent starts us).")
@click.option("--host", default=DEFAULT_HOST, show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port to listen on (0: any free port).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="cache-first",
    show_default=True,
    help="cache-first: the store, then upstream (with --allow-fetch); offline: the store only; "
    "live: upstream every time (needs --allow-fetch).",
)
@click.option(
    "--allow-fetch",
    is_flag=True,
    help="Let requests fetch misses from upstream and write the store (default: read-only).",
)
@click.option(
    "--create",
    is_flag=True,
    help="With --stdio: create the store if it does not exist (else that is an error).",
)
@click.option(
    "--token",
    envvar=ENV_SERVE_TOKEN,
    metavar="TOKEN",
    help=f"Require `Authorization: Bearer TOKEN` on every request; needed off loopback "
    f"[env {ENV_SERVE_TOKEN}].",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also accept this Host name (e.g. the machine's DNS name); repeatable.",
)
@as_of_option
@click.option(
    "--feed-lock",
    "feed_locks",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Let the change feeds narrow to this lock file's pages (?lock=ID; the log prints "
    "the ID); repeatable.",
)
@click.option(
    "--extra-tools",
    is_flag=True,
    help="Offer MCP tools beyond Google's three (list_changes).",
)
@global_options
@click.pass_context
def serve(
    ctx: click.Context,
    stdio: bool,
    host: str,
    port: int,
    mode: str,
    allow_fetch: bool,
    create: bool,
    token: str | None,
    allow_hosts: tuple[str, ...],
    feed_locks: tuple[Path, ...],
    extra_tools: bool,
) -> None:
    """Serve the mirror: MCP at /mcp, REST at /v1/, the docs browser at /.

    Read-only by default: only what is in the store is served, and nothing is fetched or
    written unless --allow-fetch is given. Binds 127.0.0.1; any other address needs a token.
    """
    # Nothing but JSON-RPC may reach stdout in stdio mode, not even from opening the store.
    with _stdout_to_stderr(stdio):
        # A server that does not fetch only reads: it serves a read-only store (a CI cache
        # volume, a shared mount) as it is; a new store is still created and migrated.
        mirror = open_mirror(ctx, read_only_ok=not allow_fetch)
        if stdio and not (allow_fetch or create):
            _refuse_a_new_store(mirror.missing_store())
        if mirror.as_of is not None and (allow_fetch or mode == "live"):
            raise ConfigError(
                "--as-of serves the store as it was then, read-only: it cannot fetch",
                hint="drop --allow-fetch and --mode live, or drop --as-of",
            )
        if mirror.settings.offline:
            if allow_fetch or mode == "live":
                raise ConfigError(
                    "--offline (or DK_MIRROR_OFFLINE) contradicts --allow-fetch and live mode",
                    hint="drop one of them",
                )
            mode = "offline"
        options = ServeOptions(
            mode=ServeMode(mode),
            allow_fetch=allow_fetch,
            host=DEFAULT_HOST if stdio else host,
            port=port,
            token=token or None,
            allowed_hosts=allow_hosts,
            feed_locks=tuple(mirror.feed_lock(path) for path in feed_locks),
            extra_tools=extra_tools,
        )
        _configure_logging()
        for path, (lock_id, names) in zip(feed_locks, options.feed_locks, strict=True):
            log.info("feeds of %s (%d pages): /feeds/changes.atom?lock=%s", path, len(names),
                     lock_id)  # fmt: skip
        from ..serve import app, runner
        from ..serve.mcp_server import build_server

        if mirror.as_of is not None and mirror.stats().documents == 0:
            from ..models import rfc3339

            log.warning(
                "the store held no documents at %s: every get is NOT_FOUND; pick a later "
                "--as-of (dk-mirror history NAME says when pages were fetched)",
                rfc3339(mirror.as_of),
            )
        elif not allow_fetch and mirror.stats().documents == 0:
            # An agent sees only empty results and NOT_FOUND: say why where a person looks.
            log.warning(
                "the store holds no documents: searches find nothing and every get is "
                "NOT_FOUND; fill it first (`dk-mirror demo` for the sample docs, `dk-mirror "
                "import FILE`, `dk-mirror crawl NAME`), or serve with --allow-fetch and an API key"
            )

        if stdio:
            app.prepare(mirror, options)
            server = build_server(mirror, options)
            log.info(
                "dk-mirror serve: MCP over stdio (%s); store %s",
                options.describe(),
                mirror.store_url,
            )
        else:
            # Bound first: with --port 0 only the socket knows the port the Origin check needs.
            sock = runner.bind(host, port)
            try:
                options = replace(options, port=sock.getsockname()[1])
                built = app.build_app(mirror, options)
            except BaseException:
                sock.close()  # a refused start (no key, bad store) frees the port
                raise
            log.info(
                "dk-mirror serve: %s -- MCP at /mcp, REST at /v1/, browser at / (%s%s); store %s",
                runner.url_of(sock),
                options.describe(),
                ", bearer token required" if options.token else "",
                mirror.store_url,
            )
            log.info("accepting Host names: %s", ", ".join(sorted(options.host_names())))
        if mirror.as_of is not None:
            from ..models import rfc3339

            log.info("answering as the store was at %s (read-only history)", rfc3339(mirror.as_of))
    if stdio:
        runner.serve_stdio(server)
    else:
        runner.serve_http(built, sock)


def _refuse_a_new_store(path: str | None) -> None:
    """Stop a stdio server before it creates an empty store at `path` (None: it exists).

    An MCP client starts the server with an environment of its own (MCP Inspector passes
    a reduced one), so the store it finds by default is often not the one the user filled:
    an empty new store would answer every request with nothing and say nothing about why."""
    if path is None:
        return
    raise ConfigError(
        f"no store at {path}: `serve --stdio` does not create one",
        hint="give the store's path in the client's configuration, e.g. "
        '"args": ["serve", "--stdio", "--db", "/path/to/dk-mirror.sqlite3"] '
        "(`dk-mirror status` shows where yours is); or add --create (an empty store) or "
        "--allow-fetch (fill it from upstream)",
    )


@contextmanager
def _stdout_to_stderr(active: bool) -> Iterator[None]:
    """Point file descriptor 1 at stderr for the duration (a stray print cannot break stdio)."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()  # anything Python buffered goes to stderr, not later to the wire
        os.dup2(saved, 1)
        os.close(saved)


def _configure_logging() -> None:
    """Diagnostics to stderr at INFO; the libraries' chatter only when it matters."""
    # basicConfig leaves a logging setup that already exists (an embedding program's) alone.
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for noisy in (
        "mcp",
        "httpx",
        "httpx2",
        "uvicorn.error",
        "uvicorn.access",
        "sse_starlette",
        "alembic",  # a line per plugin it sets up when a new store is migrated
    ):
        logging.getLogger(noisy).setLevel(logging.WARNING)
