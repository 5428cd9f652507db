"""The store's files are private to their owner: recorded searches and answers live there."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.store import Store

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_a_new_data_directory_and_store_are_private_whatever_the_umask(tmp_path: Path) -> None:
    home = tmp_path / "home" / "dk-mirror"
    env = {**os.environ, "DK_MIRROR_HOME": str(home)}
    env.pop("DK_MIRROR_DB", None)
    done = subprocess.run(
        [sys.executable, "-m", "mirror", "import", "--sample"],
        env=env,
        capture_output=True,
        text=True,
        umask=0o022,  # the usual umask: files 0644, folders 0755
    )
    assert done.returncode == 0, done.stderr
    assert mode(home) == 0o700
    assert mode(home / "dk-mirror.sqlite3") == 0o600


def test_wal_and_shm_files_follow_the_database_file(tmp_path: Path) -> None:
    old = os.umask(0o000)  # the most permissive: nothing filtered out
    try:
        store = Store.open(f"sqlite:///{tmp_path / 'new' / 'store.sqlite3'}")
    finally:
        os.umask(old)
    try:
        store.put([Document("documents/a.dev/x", content="x")], fetched_at=0.0, upstream="t")
        with store.engine.connect():  # keeps the -wal and -shm files open
            for suffix in ("", "-wal", "-shm"):
                assert mode(tmp_path / "new" / f"store.sqlite3{suffix}") == 0o600, suffix
    finally:
        store.close()
    assert mode(tmp_path / "new") == 0o700


def test_an_existing_folder_and_store_keep_their_modes(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    existing = shared / "team.sqlite3"
    sqlite3.connect(existing).close()
    existing.chmod(0o640)
    for path in (existing, shared / "new.sqlite3"):
        Store.open(f"sqlite:///{path}").close()
    assert mode(shared) == 0o755  # the user's folder (e.g. --db ./x.sqlite3): not ours to change
    assert mode(existing) == 0o640
    assert mode(shared / "new.sqlite3") == 0o600


def _modes(folder: Path) -> set[tuple[str, int]]:
    """(kind, mode) of the folder and of everything under it."""
    found = {("folder", mode(folder))}
    for path in folder.rglob("*"):
        found.add(("folder" if path.is_dir() else "file", mode(path)))
    return found


def test_the_search_index_is_as_private_as_its_store_whatever_the_umask(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "DK_MIRROR_HOME": str(home)}
    env.pop("DK_MIRROR_DB", None)
    for args in (["import", "--sample"], ["search", "--offline", "chrome"]):
        done = subprocess.run(
            [sys.executable, "-m", "mirror", *args],
            env=env,
            capture_output=True,
            text=True,
            umask=0o022,  # tantivy's own files would be 0644, its folders 0755
        )
        assert done.returncode == 0, done.stderr
    index = home / "dk-mirror.sqlite3-search"
    assert (index / "shard-0" / "meta.json").is_file()
    assert _modes(index) == {("folder", 0o700), ("file", 0o600)}


def test_an_index_follows_a_store_the_user_opened_up(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        path.chmod(0o640)  # shared with the group on purpose
        store.put([Document("documents/a.dev/x", content="x")], fetched_at=0.0, upstream="t")
        assert store.search_local("x")
    finally:
        store.close()
    assert _modes(tmp_path / "team.sqlite3-search") == {("folder", 0o750), ("file", 0o640)}
