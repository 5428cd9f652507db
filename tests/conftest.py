"""Shared fixtures: an isolated environment for every test, stores and mirrors on real files."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest

from mirror.config import ENV_HOME, ENV_MODEL_CACHE, ENV_SEMANTIC, ENV_VARS, Settings
from mirror.service import Mirror
from mirror.service import semantic as semantic_service

pytest_plugins = [
    "tests.emulator_fixtures",
    "tests.postgres_fixtures",
    "tests.store_templates",  # before the fixture modules that import it
    "tests.serve_fixtures",
    "tests.upstream_fixtures",
]

# Hypothesis fails an example that takes over 200 ms: a time assertion, which a busy machine
# (both cores taken by other work, or by xdist) breaks while the behaviour is right.
hypothesis.settings.register_profile("dk-mirror", deadline=None)
hypothesis.settings.load_profile("dk-mirror")

CANARY_KEY = "AIzaCANARY-5f3c9e1d-never-leak-this-key"
# The folder of the interpreter running the tests (a virtualenv's bin, with its dk-mirror).
UNDER_TEST_BIN = os.path.dirname(sys.executable)


# The prepared embedding model's folder (mirror/semantic/cache.py), one per test worker: each
# test's home is new, and preparing the model in each (~3 s) cost the suite minutes. Set by
# `shared_model_cache` before any test; tests/test_model_cache.py tests a home's own.
_MODELS: Path | None = None


@pytest.fixture(scope="session", autouse=True)
def shared_model_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    global _MODELS
    _MODELS = tmp_path_factory.getbasetemp() / "models"


@pytest.fixture
def home_model_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's cache in this test's own home, new: for the tests of the cache itself."""
    monkeypatch.delenv(ENV_MODEL_CACHE, raising=False)


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's settings, key or store; the default home is a temp dir."""
    isolate(monkeypatch, tmp_path / "home")


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """`isolated_env` for any scope (module fixtures build before a test's own patches)."""
    for var in ENV_VARS:  # every variable the code reads, API key included
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(ENV_HOME, str(home))
    if _MODELS is not None:
        monkeypatch.setenv(ENV_MODEL_CACHE, str(_MODELS))
    # Semantic search is on by default, and each command that writes would load the model
    # and embed what it wrote: about a second a process, minutes for the suite's 20,000-page
    # imports. Off for the suite; its own tests turn it on with `semantic_on`.
    monkeypatch.setenv(ENV_SEMANTIC, "off")
    # Mirrors made in-process from Settings(...) are on (the library's default, which no
    # variable changes): their writes embed nothing either. Measured: 9,554 pages embedded
    # across the fast loop without this, 280 s for it against 149 s.
    monkeypatch.setattr(semantic_service, "watch", _embedding_nothing)
    # A subprocess that runs `python3` or `dk-mirror` by name gets the ones under test (this
    # interpreter's, its virtualenv's), never whatever else comes first on the caller's PATH.
    monkeypatch.setenv("PATH", os.pathsep.join([UNDER_TEST_BIN, os.environ.get("PATH", "")]))


def _embedding_nothing(store: Any, embedding: Any = None) -> None:
    """semantic.watch for the suite: a store's writes embed nothing (see `isolate`)."""


_WATCH = semantic_service.watch


@pytest.fixture
def semantic_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """Semantic search as a user gets it out of the box (the suite turns it off)."""
    monkeypatch.delenv(ENV_SEMANTIC)
    monkeypatch.setattr(semantic_service, "watch", _WATCH)


# Modules whose tests run dk-mirror's commands in-process (click's CliRunner).
_CLI_FIXTURES = {"cli_online", "cli_offline"}


class _TimeWithoutSleep:
    """The time module as mirror.upstream.retry sees it in CLI tests: everything but sleep."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def sleep(self, _seconds: float) -> None:
        return None


@pytest.fixture(autouse=True)
def no_retry_waits(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command run in-process waits with the default retry policy's sleep: real backoff
    (1 s, 1.3 s, ...) and quota pacing. In CLI tests those waits take no time. Only that
    default sleep is skipped; a test that gives a policy its own `sleep` still gets it."""
    uses_cli = hasattr(request.module, "CliRunner") or _CLI_FIXTURES & set(request.fixturenames)
    if uses_cli:
        monkeypatch.setattr("mirror.upstream.retry.time", _TimeWithoutSleep())


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store for the test: an SQLite file, or (parametrised) a PostgreSQL database."""
    if getattr(request, "param", "sqlite") == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return f"sqlite:///{tmp_path / 'store.sqlite3'}"


@pytest.fixture
def another_db_url(request: pytest.FixtureRequest, db_url: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Makes more fresh stores on the test's backend, for tests that need two or more."""
    if db_url.startswith("postgresql"):
        server = request.getfixturevalue("postgres_server")
        made: list[str] = []

        def fresh_pg() -> str:
            made.append(server.fresh_database())
            return made[-1]

        yield fresh_pg
        for url in made:
            server.drop_database(url)
        return
    count = iter(range(1, 1000))
    yield lambda: f"sqlite:///{tmp_path / f'store-{next(count)}.sqlite3'}"


def no_wait_retry():  # type: ignore[no-untyped-def]
    """The default retry policy with waits patched to zero (tests never really sleep)."""
    from mirror.upstream.retry import RetryPolicy

    return RetryPolicy(sleep=lambda _seconds: None)


@pytest.fixture
def make_mirror(db_url: str, emulator):  # type: ignore[no-untyped-def]
    """Build Mirrors on the test's store, pointed at the emulator, with no real waits."""
    made: list[Mirror] = []

    def build(**overrides) -> Mirror:  # type: ignore[no-untyped-def]
        retry = overrides.pop("retry", None) or no_wait_retry()
        fields = {
            "db_url": db_url,
            "upstream": emulator.base_url,
            "api_key": emulator.api_key,
            # The suite's switch, as for the commands (`semantic_on` turns it on).
            "semantic": Settings.resolve().semantic,
            **overrides,
        }
        mirror = Mirror(Settings(**fields), retry=retry)
        made.append(mirror)
        return mirror

    yield build
    for mirror in made:
        mirror.close()


@pytest.fixture
def mirror(make_mirror) -> Iterator[Mirror]:  # type: ignore[no-untyped-def]
    """A Mirror on a fresh store, in front of the emulator over REST."""
    yield make_mirror()


def open_store(mirror: Mirror):  # type: ignore[no-untyped-def]
    """The store behind `mirror`, opened on its own (tests look and seed behind the façade)."""
    from mirror.store.store import Store

    return Store.open(mirror.settings.db_url)


def seed(mirror: Mirror, docs, *, fetched_at: float, upstream: str = "test") -> None:  # type: ignore[no-untyped-def]
    """Write `docs` into `mirror`'s store as if fetched at `fetched_at`."""
    store = open_store(mirror)
    try:
        store.put(list(docs), fetched_at=fetched_at, upstream=upstream)
    finally:
        store.close()


def seed_each(mirror: Mirror, dated, *, upstream: str = "test") -> None:  # type: ignore[no-untyped-def]
    """Write each (document, fetched_at) of `dated` into `mirror`'s store in a write of its
    own, in the order given. One store for them all: `seed` per document opened the store
    each time (migrations checked, search index opened): ~0.3 s a write against ~0.03 s."""
    store = open_store(mirror)
    try:
        for doc, fetched_at in dated:
            store.put([doc], fetched_at=fetched_at, upstream=upstream)
    finally:
        store.close()


def stored(mirror: Mirror, names):  # type: ignore[no-untyped-def]
    """name -> CachedDocument for the names `mirror`'s store holds."""
    store = open_store(mirror)
    try:
        return store.get_many(list(names))
    finally:
        store.close()


def _invoker():  # type: ignore[no-untyped-def]
    from click.testing import CliRunner

    from mirror.cli.main import cli

    def invoke(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def cli_online(db_url, emulator, monkeypatch):  # type: ignore[no-untyped-def]
    """Invoke the CLI against the emulator and the test's store."""
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url)
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", emulator.api_key)
    return _invoker()


@pytest.fixture
def cli_offline(db_url, monkeypatch):  # type: ignore[no-untyped-def]
    """Invoke the CLI offline against the test's store."""
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")
    return _invoker()


def document_count(db_url: str) -> int:
    """How many documents the store at `db_url` holds."""
    from mirror.store.store import Store

    store = Store.open(db_url)
    try:
        return store.stats().documents
    finally:
        store.close()


def query_store(db_url: str, statement: str) -> list[tuple]:  # type: ignore[type-arg]
    """Rows of one SQL statement run on the store at `db_url`, on either backend (tests look
    behind the store's interface with plain SQL both databases understand)."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(statement))]
    finally:
        engine.dispose()
