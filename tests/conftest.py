"""Shared fixtures: an isolated environment for every test, stores and mirrors on real files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.service import Mirror

pytest_plugins = ["tests.emulator_fixtures", "tests.serve_fixtures", "tests.upstream_fixtures"]

CANARY_KEY = "AIzaCANARY-5f3c9e1d-never-leak-this-key"


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test sees the developer's settings, key or store; the default home is a temp dir."""
    for var in (
        "DK_MIRROR_DB",
        "DK_MIRROR_UPSTREAM",
        "DK_MIRROR_TRANSPORT",
        "DK_MIRROR_OFFLINE",
        "DK_MIRROR_MAX_AGE",
        "DK_MIRROR_GET_PER_MINUTE",
        "DK_MIRROR_SEARCH_PER_MINUTE",
        "DK_MIRROR_ANSWERS_PER_DAY",
        "DEVELOPER_KNOWLEDGE_API_KEY",
        "DK_MIRROR_SERVE_TOKEN",
        "DK_MIRROR_MAX_DOCUMENT_BYTES",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DK_MIRROR_HOME", str(tmp_path / "home"))


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite file for the test."""
    return f"sqlite:///{tmp_path / 'store.sqlite3'}"


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
