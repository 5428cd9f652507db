"""Fixtures for `dk-mirror serve`: real servers (uvicorn on 127.0.0.1, an ephemeral port).

The web stack is imported inside the fixtures, so tests that never serve never load it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.config import Settings
from mirror.service import Mirror
from tests.conftest import no_wait_retry
from tests.store_templates import StoreTemplates, import_sample

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture
def serve_app() -> Iterator[Callable[..., str]]:
    """Start `build_app(mirror, ServeOptions(**options))` in a thread; returns its base URL."""
    from mirror.serve import ServeOptions
    from mirror.serve.app import build_app
    from mirror.serve.runner import bind, running

    with contextlib.ExitStack() as stack:

        def start(mirror: Mirror, **options: Any) -> str:
            # Bound first: the app's Origin checks need the real port.
            sock = bind("127.0.0.1", 0)
            options.setdefault("port", sock.getsockname()[1])
            app = build_app(mirror, ServeOptions(**options))
            return stack.enter_context(running(app, sock=sock))

        yield start


@pytest.fixture
def store_mirror(
    another_db_url: Callable[[], str], store_templates: StoreTemplates
) -> Iterator[Callable[..., Mirror]]:
    """Mirrors on named stores (on the test's backend), closed after the test. `sample=True`
    makes a new store hold the sample documents (on SQLite, a copy of a store that imported
    them once per session)."""
    made: list[Mirror] = []
    urls: dict[str, str] = {}

    def build(name: str = "served", *, sample: bool = False, **fields: Any) -> Mirror:
        if name not in urls:
            urls[name] = another_db_url()
            if sample and urls[name].startswith("sqlite:///"):
                path = Path(urls[name].removeprefix("sqlite:///"))
                store_templates.copy("sample", import_sample, path)
            elif sample:
                import_sample(urls[name])
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
