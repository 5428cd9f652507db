"""Where a store's search index lives: a folder beside the SQLite file, or in the user cache
folder when the store's folder is read-only (tantivy cannot open a read-only folder)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ..config import ENV_HOME

# The index's record of the change it holds up to (text_index.TextIndex.state).
STATE = "state.json"
# The lock file one indexing process holds (folder_lock.py).
LOCK = "index.lock"


def folder_for(database: str | None) -> Path | None:
    """The index folder of an SQLite file (None for an in-memory database): beside the file,
    or, when that cannot be written (a read-only folder or mount), in the cache folder (a
    copy of the one beside the file, if there is one; else built there from the store)."""
    if not database or database == ":memory:" or "mode=memory" in database:
        return None
    path = Path(database).resolve()
    beside = path.with_name(path.name + "-search")
    if _writable(beside) if beside.is_dir() else _writable(path.parent):
        return beside
    key = hashlib.sha256(str(path).encode()).hexdigest()[:24]
    cached = _cache_root() / "search" / key
    if not cached.is_dir() and (beside / STATE).is_file():
        with contextlib.suppress(OSError):
            shutil.copytree(beside, cached, ignore=shutil.ignore_patterns(".tantivy-*", LOCK))
            _owner_writes(cached)
    return cached


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


def _cache_root() -> Path:
    home = os.environ.get(ENV_HOME)
    if home:
        return Path(home).expanduser() / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir("dk-mirror", appauthor=False))
