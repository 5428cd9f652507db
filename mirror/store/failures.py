"""Database failures as StoreError: the store boundary, so no SQLAlchemy or DBAPI error escapes.

Messages quote the database's own one-line reason, never the failed statement: an SQL text
or its parameters can hold document content. Stores are named by path, or by URL with the
password hidden.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, ProgrammingError

from ..errors import StoreError

# Execution option for a statement whose failure the caller expects and handles itself
# (reading the revision of a blank database, which has no alembic_version table yet).
PROBE = "dk_mirror_probe"

# Below this much free space an SQLite I/O error is taken for a full disk (SQLite needs
# 32 KiB for the -shm file and a page or more per write).
FULL_BELOW = 1 << 20
# Where to look for `--db` and its variable, in every hint that points at a setting.
WHERE = "--db / DK_MIRROR_DB"
READ_ONLY_HINT = (
    "this command writes to the store: point --db at a writable copy, or read it with a "
    "command that only reads (get --offline, ls, search --offline, status)"
)

# SQLite's primary result codes by name (Python 3.11: sqlite3.Error.sqlite_errorname),
# mapped to (what happened, what to do). Extended codes share their primary's entry.
_SQLITE: dict[str, tuple[str, str]] = {
    "SQLITE_READONLY": ("the store is read-only: {where}", READ_ONLY_HINT),
    "SQLITE_FULL": (
        "the disk holding the store is full: {where}",
        f"free some space, or move the store elsewhere with {WHERE}",
    ),
    "SQLITE_NOTADB": (
        "{where} is not an SQLite database",
        f"point {WHERE} at a dk-mirror store (a .sqlite3 file) or a database URL",
    ),
    "SQLITE_CORRUPT": (
        "the store is damaged: {where}",
        "run `dk-mirror doctor`; rebuild it from a snapshot (`dk-mirror snapshot import`)",
    ),
    "SQLITE_BUSY": (
        "the store is locked by another process: {where}",
        "wait for the other dk-mirror (a fetch or import) to finish, then retry",
    ),
    "SQLITE_LOCKED": (
        "the store is locked by another connection: {where}",
        "wait for the other dk-mirror (a fetch or import) to finish, then retry",
    ),
    "SQLITE_CANTOPEN": (
        "cannot open the store at {where}",
        f"check the path given by {WHERE}, and that its folder exists and can be read",
    ),
    "SQLITE_IOERR": (
        "disk I/O error on the store: {where}",
        "check the disk: free space, permissions, a mount that went away",
    ),
    "SQLITE_PERM": ("the store may not be opened: {where}", f"check permissions, or {WHERE}"),
}


def _reason(orig: BaseException) -> str:
    # The database's own reason, first line only (PostgreSQL adds DETAIL lines with values).
    text = str(orig).strip().splitlines()
    return text[0] if text else type(orig).__name__


def _disk_full(where: str) -> bool:
    return _short_of_space(Path(where).parent)


def _short_of_space(folder: Path) -> bool:
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
    return "(os error 28)" in str(exc) or (folder is not None and _short_of_space(folder))


def index_failure(folder: Path | None, exc: BaseException) -> StoreError:
    """The StoreError for the search index failing to write: tantivy's ValueError (its I/O
    errors arrive as "an index writer was killed", without the cause) or an OSError."""
    where = str(folder) if folder is not None else "the search index in memory"
    if index_disk_full(folder, exc):
        message, hint = _SQLITE["SQLITE_FULL"]
        return StoreError(f"{message.format(where=where)} (writing the search index)", hint=hint)
    return StoreError(
        f"the search index could not be written: {_reason(exc)} ({where})",
        hint="check the disk (free space, permissions, a mount that went away); "
        "`dk-mirror index rebuild` makes the index again from the store",
    )


def from_dbapi(orig: BaseException, where: str) -> StoreError:
    """The StoreError for a DBAPI exception raised while using the store at `where`."""
    name = getattr(orig, "sqlite_errorname", None)
    if isinstance(name, str):
        primary = "_".join(name.split("_")[:2])  # SQLITE_READONLY_DIRECTORY -> SQLITE_READONLY
        if primary == "SQLITE_IOERR" and _disk_full(where):
            # A full disk fails the -shm file's allocation as an I/O error, not SQLITE_FULL.
            primary = "SQLITE_FULL"
        known = _SQLITE.get(primary)
        if known is not None:
            message, hint = known
            return StoreError(f"{message.format(where=where)} ({_reason(orig)})", hint=hint)
        return StoreError(
            f"the store failed: {_reason(orig)} ({where})",
            hint="run `dk-mirror doctor`, and report it if the store checks out",
        )
    return StoreError(
        f"the database failed: {_reason(orig)} ({where})",
        hint=f"check that the database server is running and the URL in {WHERE} is right",
    )


def on_error(context: ExceptionContext, *, where: str) -> None:
    """SQLAlchemy `handle_error` hook: raise the StoreError in place of a database error."""
    if not isinstance(context.sqlalchemy_exception, DBAPIError):
        return  # not the database's failure (an interrupt, a bug in our own code)
    execution = context.execution_context
    if (
        execution is not None
        and execution.execution_options.get(PROBE)
        and _is_missing_table(context)
    ):
        return  # the caller expects this failure and handles it itself
    raise from_dbapi(context.original_exception, where) from None


def _is_missing_table(context: ExceptionContext) -> bool:
    # SQLite says "no such table" with its generic code; PostgreSQL raises UndefinedTable, a
    # ProgrammingError. Anything else (a full disk, a non-database file) is still mapped.
    name = getattr(context.original_exception, "sqlite_errorname", None)
    return name == "SQLITE_ERROR" or isinstance(context.sqlalchemy_exception, ProgrammingError)
