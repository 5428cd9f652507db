"""Fixtures for `dk-mirror serve`: the app in-process (Starlette's TestClient), or a real
server (uvicorn on 127.0.0.1, an ephemeral port) for what needs a socket.

Route, header and status tests use `serve_client`: the same app, its middleware and lifespan,
called without a socket, a server thread or a port. Tests of what happens on the wire (chunked
bodies, deadlines, keep-alive, other programs as clients) use `serve_app`, or, when they
only read the sample, `served_sample`: one real server for the whole module.
The web stack is imported inside the fixtures, so tests that never serve never load it.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from mirror.config import Settings
from mirror.service import Mirror
from tests.conftest import isolate, no_wait_retry
from tests.store_templates import StoreTemplates, import_sample

TOKEN = "test-token-0123456789abcdef"
# The port an in-process app is built for and its client's URL names (nothing listens on it):
# the Host and Origin checks compare against it as they would against a real port.
IN_PROCESS_PORT = 8787

if TYPE_CHECKING:
    from starlette.testclient import TestClient


@pytest.fixture
def serve_client() -> Iterator[Callable[..., TestClient]]:
    """`build_app(mirror, ServeOptions(**options), replay=replay)` behind a TestClient whose
    base URL is http://127.0.0.1:<port>; its lifespan runs, and it closes after the test.
    Server errors come back as 500 responses, as from uvicorn."""
    from starlette.testclient import TestClient

    from mirror.serve import ServeOptions
    from mirror.serve.app import build_app

    with contextlib.ExitStack() as stack:

        def start(mirror: Mirror, *, replay: bool = True, **options: Any) -> TestClient:
            options.setdefault("port", IN_PROCESS_PORT)
            app = build_app(mirror, ServeOptions(**options), replay=replay)
            base_url = f"http://127.0.0.1:{options['port']}"
            client = TestClient(app, base_url=base_url, raise_server_exceptions=False)
            return stack.enter_context(client)

        yield start


def _serve(stack: contextlib.ExitStack, mirror: Mirror, **options: Any) -> str:
    """`build_app(mirror, ServeOptions(**options))` under uvicorn in a thread until `stack`
    closes; its base URL."""
    from mirror.serve import ServeOptions
    from mirror.serve.app import build_app
    from mirror.serve.runner import bind, running

    # Bound first: the app's Origin checks need the real port.
    sock = bind("127.0.0.1", 0)
    options.setdefault("port", sock.getsockname()[1])
    app = build_app(mirror, ServeOptions(**options))
    return stack.enter_context(running(app, sock=sock))


@pytest.fixture
def serve_app() -> Iterator[Callable[..., str]]:
    """Start `build_app(mirror, ServeOptions(**options))` in a thread; returns its base URL."""
    with contextlib.ExitStack() as stack:
        yield functools.partial(_serve, stack)


@pytest.fixture(scope="module")
def served_sample(
    store_templates: StoreTemplates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """One real server for a whole module of read-only tests: the offline sample mirror with
    default options, under uvicorn on 127.0.0.1; its base URL. (A test that changes the store
    or needs other options starts its own with `serve_app`.)"""
    folder = tmp_path_factory.mktemp("served-sample")
    with contextlib.ExitStack() as stack:
        env = stack.enter_context(pytest.MonkeyPatch.context())
        isolate(env, folder / "home")
        db_url = store_templates.copy("sample", import_sample, folder / "store.sqlite3")
        mirror = stack.enter_context(
            Mirror(Settings(db_url=db_url, offline=True), retry=no_wait_retry())
        )
        yield _serve(stack, mirror)


@pytest.fixture
def store_mirror(
    request: pytest.FixtureRequest,
    another_db_url: Callable[[], str],
    store_templates: StoreTemplates,
) -> Iterator[Callable[..., Mirror]]:
    """Mirrors on named stores (on the test's backend), closed after the test. `sample=True`
    makes a new store hold the sample documents: a copy of a store (SQLite) or a database
    (PostgreSQL) that imported them once per session."""
    made: list[Mirror] = []
    urls: dict[str, str] = {}

    def build(name: str = "served", *, sample: bool = False, **fields: Any) -> Mirror:
        if name not in urls:
            urls[name] = another_db_url()
            if sample and urls[name].startswith("sqlite:///"):
                path = Path(urls[name].removeprefix("sqlite:///"))
                store_templates.copy("sample", import_sample, path)
            elif sample:
                server = request.getfixturevalue("postgres_server")
                server.copy_over(urls[name], server.template("sample", import_sample))
        settings = Settings(db_url=urls[name], **fields)
        mirror = Mirror(settings, retry=no_wait_retry())
        made.append(mirror)
        return mirror

    yield build
    for mirror in made:
        mirror.close()


@pytest.fixture
def sample_mirror(store_mirror: Callable[..., Mirror]) -> Mirror:
    """An offline mirror holding the 50 sample documents."""
    return store_mirror("sample", sample=True, offline=True)
