"""Database failures as StoreError: the store boundary, so no SQLAlchemy or DBAPI error escapes.

Messages quote the database's own one-line reason, never the failed statement: an SQL text
or its parameters can hold document content. Stores are named by path, or by URL with the
password hidden.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import DBAPIError, ProgrammingError

from ...errors import StoreError, WriteConflict
from .disk import DISK_FULL, DISK_FULL_HINT, WHERE, first_line, short_of_space

# Execution option for a statement whose failure the caller expects and handles itself
# (reading the revision of a blank database, which has no alembic_version table yet).
PROBE = "dk_mirror_probe"

READ_ONLY_HINT = (
    "this command writes to the store: point --db at a writable copy, or read it with a "
    "command that only reads (get --offline, ls, search --offline, status)"
)

# SQLite's primary result codes by name (Python 3.11: sqlite3.Error.sqlite_errorname),
# mapped to (what happened, what to do). Extended codes share their primary's entry.
_SQLITE: dict[str, tuple[str, str]] = {
    "SQLITE_READONLY": ("the store is read-only: {where}", READ_ONLY_HINT),
    "SQLITE_FULL": (DISK_FULL, DISK_FULL_HINT),
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


# SQLSTATEs PostgreSQL gives a transaction it rolled back for colliding with another one at
# the same moment: the same write run again succeeds (turns.py retries them).
RETRYABLE_SQLSTATES = {
    "40P01": "deadlock detected",
    "40001": "serialization failure",
}
CONFLICT_HINT = (
    "other dk-mirror commands were writing the same pages at the same moment and PostgreSQL "
    "rolled this write back (nothing of it was kept); it was retried and collided every time: "
    "run the command again"
)


def _disk_full(where: str) -> bool:
    return short_of_space(Path(where).parent)


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
            return StoreError(f"{message.format(where=where)} ({first_line(orig)})", hint=hint)
        return StoreError(
            f"the store failed: {first_line(orig)} ({where})",
            hint="run `dk-mirror doctor`, and report it if the store checks out",
        )
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate in RETRYABLE_SQLSTATES:
        return WriteConflict(
            f"another writer collided with this one: {RETRYABLE_SQLSTATES[sqlstate]} "
            f"(SQLSTATE {sqlstate}) ({where})",
            hint=CONFLICT_HINT,
        )
    return StoreError(
        f"the database failed: {first_line(orig)} ({where})",
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
