"""A store for tests of the command line: a new SQLite file holding some documents, which the
commands under test open through DK_MIRROR_DB."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.store import Store
from tests.user_env import user_env


def put_documents(db_url: str, docs: Iterable[Document]) -> None:
    """`docs` written to the store at `db_url` (made when new)."""
    store = Store.open(db_url)
    try:
        store.put(list(docs), fetched_at=1.0, upstream="test")
    finally:
        store.close()


def stored_for_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: Iterable[Document]
) -> Path:
    """`docs` in a new store under `tmp_path`, which DK_MIRROR_DB names; its path."""
    path = tmp_path / "store.sqlite3"
    put_documents(f"sqlite:///{path}", docs)
    monkeypatch.setenv("DK_MIRROR_DB", str(path))
    return path


def sample_env(folder: Path, **extra: str) -> dict[str, str]:
    """An environment for `dk-mirror` processes on a store of their own under `folder`,
    which the sample is imported into (words only: no model to load), with `extra` set."""
    clean = user_env()
    env = {
        **clean,
        "DK_MIRROR_HOME": str(folder / "home"),
        "DK_MIRROR_DB": f"sqlite:///{folder / 'store.sqlite3'}",
        "DK_MIRROR_SEMANTIC": "off",
        **extra,
    }
    done = subprocess.run(
        [sys.executable, "-m", "mirror", "import", "--sample"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return env
