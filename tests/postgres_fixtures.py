"""Pytest fixtures for PostgreSQL: one server per session, one fresh database per test.

Modules opt in to running on both backends with `pytestmark = pytest.mark.both_backends`;
their tests that use `db_url` then run once on an SQLite file and once on PostgreSQL. A test
that is inherently SQLite (pragmas, file modes, WAL, paths) carries `@pytest.mark.sqlite_only`.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

if __package__:
    from .postgres_server import PostgresServer, binaries
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    from postgres_server import PostgresServer, binaries

BACKENDS = ("sqlite", "postgresql")


def _missing() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    if binaries() is None:
        return "PostgreSQL 15 server binaries not found (apt-get install postgresql, or set PG_BIN)"
    if importlib.util.find_spec("psycopg") is None:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    return None


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the session with a migrated template database."""
    reason = _missing()
    if reason is not None:
        # CI installs PostgreSQL (.ci/check): there, missing is a failure, not a skip.
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI is set but PostgreSQL tests cannot run: {reason}")
        pytest.skip(reason)
    bin_dir = binaries()
    assert bin_dir is not None
    server = PostgresServer(bin_dir)
    try:
        server.start()
        server.create_template()
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test (dropped after it)."""
    url = postgres_server.fresh_database()
    yield url
    postgres_server.drop_database(url)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run `db_url` tests of `both_backends` modules on each backend (ids: sqlite, postgresql)."""
    if "db_url" not in metafunc.fixturenames:
        return
    definition = metafunc.definition
    if definition.get_closest_marker("both_backends") is None:
        return
    if definition.get_closest_marker("sqlite_only") is not None:
        return
    metafunc.parametrize("db_url", BACKENDS, indirect=True)


def runs_on_postgresql(item: pytest.Item) -> bool:
    """Whether a test needs the PostgreSQL server: it asks for it (or a database in it), or one
    of its parameters (`db_url`, a module store's backend) is "postgresql"."""
    if {"postgres_server", "pg_url"} & set(getattr(item, "fixturenames", ())):
        return True
    callspec = getattr(item, "callspec", None)
    return callspec is not None and "postgresql" in callspec.params.values()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every PostgreSQL run `postgresql`, so `-m "not postgresql"` leaves them all out."""
    for item in items:
        if runs_on_postgresql(item):
            item.add_marker(pytest.mark.postgresql)
