"""A store for tests of the command line: a new SQLite file holding some documents, which the
commands under test open through DK_MIRROR_DB."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.store import Store


def stored_for_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: Iterable[Document]
) -> Path:
    """`docs` in a new store under `tmp_path`, which DK_MIRROR_DB names; its path."""
    path = tmp_path / "store.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        store.put(list(docs), fetched_at=1.0, upstream="test")
    finally:
        store.close()
    monkeypatch.setenv("DK_MIRROR_DB", str(path))
    return path
