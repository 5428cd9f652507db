"""A full disk, and the search index's write failures, as StoreError.

Kept apart from failures.py (the SQLAlchemy boundary): the index is opened on the cold read
path (`search --offline` through the sqlite3 Reader), which must not import SQLAlchemy.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

from ...errors import StoreError

# Below this much free space an I/O error is taken for a full disk (SQLite needs 32 KiB for
# the -shm file and a page or more per write).
FULL_BELOW = 1 << 20
# Where to look for `--db` and its variable, in every hint that points at a setting.
WHERE = "--db / DK_MIRROR_DB"
DISK_FULL = "the disk holding the store is full: {where}"
DISK_FULL_HINT = f"free some space, or move the store elsewhere with {WHERE}"


def first_line(exc: BaseException) -> str:
    """An error's own reason, first line only (PostgreSQL adds DETAIL lines with values)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def short_of_space(folder: Path) -> bool:
    try:
        return shutil.disk_usage(folder).free < FULL_BELOW
    except OSError:
        return False  # not a path (a server URL), or gone


@contextlib.contextmanager
def index_writes(folder: Path | None) -> Iterator[None]:
    """Around a write to the search index: its failure raised as index_failure's StoreError."""
    try:
        yield
    except (ValueError, OSError) as exc:
        raise index_failure(folder, exc) from None


def index_disk_full(folder: Path | None, exc: BaseException) -> bool:
    """Whether the index's write failed for want of space (tantivy's I/O errors quote the OS
    error at best, "os error 28", or not at all)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "(os error 28)" in str(exc) or (folder is not None and short_of_space(folder))


def index_failure(folder: Path | None, exc: BaseException) -> StoreError:
    """The StoreError for the search index failing to write: tantivy's ValueError (its I/O
    errors arrive as "an index writer was killed", without the cause) or an OSError."""
    where = str(folder) if folder is not None else "the search index in memory"
    if index_disk_full(folder, exc):
        message = DISK_FULL.format(where=where)
        return StoreError(f"{message} (writing the search index)", hint=DISK_FULL_HINT)
    return StoreError(
        f"the search index could not be written: {first_line(exc)} ({where})",
        hint="check the disk (free space, permissions, a mount that went away); "
        "`dk-mirror index rebuild` makes the index again from the store",
    )
