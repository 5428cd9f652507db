"""Where a store's search index lives: a folder beside the SQLite file, or in the user cache
folder when the store's folder is read-only (tantivy cannot open a read-only folder)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ....config import ENV_HOME

# The index's record of the change it holds up to (text_index.TextIndex.state).
STATE = "state.json"
# The lock file one indexing process holds (folder_lock.py).
LOCK = "index.lock"


def folder_for(database: str | None) -> Path | None:
    """The index folder of an SQLite file (None for an in-memory database): beside the file,
    or, when that cannot be written (a read-only folder or mount), in the cache folder (a
    copy of the one beside the file, if there is one; else built there from the store).
    None too when no cache folder can be written: the index is then kept in memory."""
    if not database or database == ":memory:" or "mode=memory" in database:
        return None
    path = Path(database).resolve()
    beside = path.with_name(path.name + "-search")
    if _writable(beside) if beside.is_dir() else _writable(path.parent):
        return beside
    key = hashlib.sha256(str(path).encode()).hexdigest()[:24]
    cached = _cache_folder(key)
    if cached is None:
        return None  # nowhere to write one: the index is built in memory from the store
    if not cached.is_dir() and (beside / STATE).is_file():
        with contextlib.suppress(OSError):
            shutil.copytree(beside, cached, ignore=shutil.ignore_patterns(".tantivy-*", LOCK))
            _owner_writes(cached)
    return cached


def keep_private(folder: Path) -> None:
    """Give the index folder the store file's permissions (a 0600 store: folder and shards
    0700, files 0600), whatever the umask tantivy's files were made under: the index holds the
    words of every page, so it is as private as the store. A copy in the cache folder, with no
    store beside it, is 0700/0600. Files this user cannot change are left as they are."""
    store = folder.with_name(folder.name.removesuffix("-search"))
    try:
        files = stat.S_IMODE(store.stat().st_mode) & 0o666 if store != folder else 0o600
    except OSError:
        files = 0o600
    folders = files | (files & 0o444) >> 2  # x wherever r: the folder can be entered
    for root, _folders, names in os.walk(folder):
        _chmod(root, folders)
        for name in names:
            _chmod(os.path.join(root, name), files)


def _chmod(path: str, mode: int) -> None:
    with contextlib.suppress(OSError):  # gone meanwhile (a merge), or another user's
        if stat.S_IMODE(os.stat(path).st_mode) != mode:
            os.chmod(path, mode)


def _owner_writes(folder: Path) -> None:
    """Let this user write every folder and file under `folder`: copytree copies the mode
    bits, and a copy of an index made read-only by its permissions (chmod, another user's
    files) would be as unwritable as the original."""
    for root, folders, files in os.walk(folder):
        for name in [".", *folders]:
            path = os.path.join(root, name)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | stat.S_IRWXU)
        for name in files:
            path = os.path.join(root, name)
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) | stat.S_IRUSR | stat.S_IWUSR)


def _writable(folder: Path) -> bool:
    # os.access misses a read-only mount for root: try it.
    try:
        with tempfile.TemporaryFile(dir=folder):
            return True
    except OSError:
        return False


def _cache_folder(key: str) -> Path | None:
    """The folder for the index copy `key`: under the first cache root this user can write
    (DK_MIRROR_HOME may be the very read-only volume the store is on)."""
    for root in _cache_roots():
        folder = root / "search" / key
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if _writable(folder if folder.is_dir() else folder.parent):
            return folder
    return None


def _cache_roots() -> Iterator[Path]:
    """Where index copies may go, in order of preference (each made only when reached)."""
    import platformdirs

    home = os.environ.get(ENV_HOME)
    if home:
        yield Path(home).expanduser() / "cache"
    yield Path(platformdirs.user_cache_dir("dk-mirror", appauthor=False))
    # Last, a folder of this user's own in the temporary folder (made 0700; one another
    # user made first is not used).
    uid = os.getuid() if hasattr(os, "getuid") else 0
    private = Path(tempfile.gettempdir()) / f"dk-mirror-{uid}"
    with contextlib.suppress(OSError):
        private.mkdir(mode=0o700, exist_ok=True)
        if not private.is_symlink() and private.stat().st_uid == uid:
            yield private
