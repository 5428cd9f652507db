"""SQLite stores built once per session (per xdist worker) and copied per test.

A template is built by the real code (migrated, documents written, the search index built)
in a folder of its own, then closed; a test gets a file copy of it: the SQLite file and the
tantivy index folder beside it (`<file>-search`), so it starts from exactly the store that
build made and may change it freely. Building a store costs seconds (51 writes, each closing
with an index sync); copying it costs milliseconds.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from mirror.service import Mirror

# Builds a store at the SQLite URL it is given (and closes whatever it opened).
Build = Callable[[str], None]
_FILE = "store.sqlite3"


class StoreTemplates:
    """Templates by name, each built on first use under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[str, Path] = {}

    def copy(self, name: str, build: Build, db_path: Path) -> str:
        """A copy of template `name` (made by `build` the first time) at `db_path`; its URL."""
        folder = self._built.get(name) or self._build(name, build)
        assert not db_path.exists(), f"{db_path} exists: a template copies onto no store"
        for entry in folder.iterdir():  # the file, its index folder, and a WAL if one is left
            target = db_path.with_name(db_path.name + entry.name.removeprefix(_FILE))
            if entry.is_dir():
                shutil.copytree(entry, target)
            else:
                shutil.copy2(entry, target)
        return f"sqlite:///{db_path}"

    def _build(self, name: str, build: Build) -> Path:
        folder = self.root / name
        folder.mkdir(parents=True)
        build(f"sqlite:///{folder / _FILE}")
        self._built[name] = folder
        return folder


def import_sample(db_url: str) -> None:
    """Build: the 50 sample documents shipped in the package (`dk-mirror import --sample`)."""
    from mirror.config import Settings
    from mirror.service import Mirror

    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        mirror.import_sample()


@pytest.fixture(scope="session")
def store_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreTemplates]:
    """The session's store templates (one set per xdist worker)."""
    yield StoreTemplates(tmp_path_factory.mktemp("store-templates"))


@pytest.fixture
def sample_url(tmp_path: Path, store_templates: StoreTemplates) -> str:
    """A copy of the store holding the 50 sample documents (SQLite), for this test alone."""
    return store_templates.copy("sample", import_sample, tmp_path / "store.sqlite3")


@pytest.fixture
def sample(sample_url: str) -> Iterator[Mirror]:
    """The sample store, opened offline."""
    from mirror.config import Settings
    from mirror.service import Mirror as Opened

    with Opened(Settings(db_url=sample_url, offline=True)) as mirror:
        yield mirror
