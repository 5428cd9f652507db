"""Running a built server: HTTP under uvicorn (foreground or in a thread), or MCP over stdio."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
import uvicorn

from ..errors import ConfigError, MirrorError
from .header_deadline import HeaderDeadlineProtocol
from .stdio_relay import DRAIN_SECONDS, AnswerAll

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from starlette.types import ASGIApp

# Seconds a stopping server waits for requests in flight before closing them.
GRACEFUL_SECONDS = 5
# Seconds an idle keep-alive connection stays open between requests.
KEEP_ALIVE_SECONDS = 5
# Connections queued before they are accepted (uvicorn's default).
BACKLOG = 2048


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free port); ConfigError if it cannot be had."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only when the
    # protocol says TCP, and without it Nagle plus delayed ACKs add ~40 ms to small answers.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another --port (0 picks a free one), or stop what is using it",
        ) from None
    # Listening from here, not from when uvicorn starts: the start-up line that follows says
    # the server is up, and a client that connects at once must queue, not be refused.
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    """The http:// base URL a bound socket serves."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _server(app: ASGIApp) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        # Logging is the CLI's: uvicorn's default config would send access lines to stdout.
        log_config=None,
        access_log=False,
        server_header=False,
        lifespan="on",
        ws="none",
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        # An idle keep-alive connection is closed after this long (uvicorn's default, explicit);
        # one that is not yet idle but has not finished its headers: header_deadline.py.
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        http=HeaderDeadlineProtocol,
    )
    return uvicorn.Server(config)


def serve_http(app: ASGIApp, sock: socket.socket) -> None:
    """Serve `app` on the bound socket until interrupted (Ctrl-C / SIGTERM)."""
    _server(app).run(sockets=[sock])


@contextmanager
def running(
    app: ASGIApp, host: str = "127.0.0.1", port: int = 0, sock: socket.socket | None = None
) -> Iterator[str]:
    """Serve `app` in a background thread (tests, benchmarks); yields its base URL.

    Pass `sock` when the app was built for its port (bind it first with `bind`).
    """
    sock = sock or bind(host, port)
    server = _server(app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=GRACEFUL_SECONDS + 5)
        sock.close()


def serve_stdio(server: MCPServer, ready: Callable[[], None] | None = None) -> None:
    """Speak MCP on stdin/stdout until stdin closes and every request read has its answer."""
    if ready is not None:
        ready()
    unanswered = anyio.run(_serve_stdio_async, server)
    if unanswered:
        raise MirrorError(
            f"stdin closed and {unanswered} request(s) were still unanswered after "
            f"{DRAIN_SECONDS} s; they were dropped",
            hint="see the log above for the slow calls; rerun those requests",
        )


async def _serve_stdio_async(server: MCPServer) -> int:
    """Run `server` over stdio; returns how many requests were left unanswered."""
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (stdin, stdout):
        relay = AnswerAll(stdin, stdout)
        # The SDK offers stdio only as run_stdio_async, which hands the server the raw stdin
        # stream: at end of input the server stops and cancels the calls in flight. The
        # relay keeps the server's input open until every request read has been answered.
        lowlevel = server._lowlevel_server
        options = lowlevel.create_initialization_options()
        async with anyio.create_task_group() as group:
            group.start_soon(relay.pump_in)
            async with anyio.create_task_group() as serving:
                serving.start_soon(relay.pump_out)
                await lowlevel.run(relay.server_in, relay.server_out, options)
            group.cancel_scope.cancel()  # the server stopped on its own: stop reading
        return relay.unanswered()
