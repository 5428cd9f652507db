"""Engine creation: one place that knows about connection settings and SQLite pragmas."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url

from ..errors import StoreError

log = logging.getLogger("mirror.store")

# Milliseconds a connection waits for another writer's lock before failing with "locked".
BUSY_TIMEOUT_MS = 5000
# Execution option that marks a connection as a writer (its BEGIN takes the write lock).
WRITE = "dk_mirror_write"
# Connections a SQLite pool keeps open between uses, unless the owner sizes it (Store.size_for).
# They are opened lazily, so a one-shot CLI command still opens one or two.
SQLITE_POOL_SIZE = 8


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's begin event issue BEGIN itself; pysqlite's implicit BEGIN would start
    # transactions late (at the first write) and as DEFERRED, inviting SQLITE_BUSY upgrades.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        # WAL: readers never block the writer and vice versa (browse while fetching).
        # The pragma answers with the mode in force; :memory: and some filesystems refuse WAL.
        mode = cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":
            log.warning(
                "SQLite kept journal_mode=%s (WAL refused); writers will block readers", mode
            )
        # Wait for a competing writer instead of failing at once with "database is locked".
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        # SQLite leaves foreign keys off per connection unless asked.
        cursor.execute("PRAGMA foreign_keys=ON")
        # NORMAL is crash-safe under WAL and saves an fsync per commit.
        cursor.execute("PRAGMA synchronous=NORMAL")
    finally:
        cursor.close()


def _on_sqlite_begin(conn: Any) -> None:
    # Writers take the write lock up front (IMMEDIATE), so two writers queue on busy_timeout
    # rather than deadlocking when both try to upgrade a read lock. Readers issue a plain
    # (deferred) BEGIN so that several statements see one snapshot.
    if conn.get_execution_options().get(WRITE):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


# The store holds recorded searches and answers: only its owner may read it. SQLite gives the
# -wal and -shm files the database file's permissions, so creating that one 0600 covers them.
FOLDER_MODE = 0o700
FILE_MODE = 0o600


def _create_private(database: Path) -> None:
    """Create the store's folder (0700) and empty file (0600) if missing, whatever the umask.

    Existing folders and files keep their permissions: they are the user's choice.
    """
    folder = database.parent
    try:
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)
            # mkdir's mode is filtered by the umask (and parents ignore it); chmod is not.
            os.chmod(folder, FOLDER_MODE)
        fd = os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return  # the usual case: the store exists (or another process just created it)
    except OSError as exc:
        raise StoreError(
            f"cannot create the store {database}: {exc.strerror}",
            hint="set DK_MIRROR_HOME or --db to a writable location",
        ) from None
    os.close(fd)
    os.chmod(database, FILE_MODE)  # os.open's mode is filtered by the umask too


def create(url: str | URL, *, pool_size: int | None = None) -> Engine:
    """An engine for `url`, with the pragmas and transaction handling this store relies on.

    `pool_size`: connections kept open for reuse (the owner's concurrency); None: the default.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            _create_private(Path(database))
        engine = create_engine(url, **_sqlite_pool_args(database, pool_size))
        event.listen(engine, "connect", _on_sqlite_connect)
        event.listen(engine, "begin", _on_sqlite_begin)
        return engine
    sized = {} if pool_size is None else {"pool_size": pool_size}
    return create_engine(url, pool_pre_ping=True, **sized)


def _sqlite_pool_args(database: str | None, pool_size: int | None) -> dict[str, Any]:
    """Pool arguments for a SQLite database file (an in-memory one keeps its own pool)."""
    if not database or database == ":memory:" or "mode=memory" in database:
        return {}
    # No overflow limit: a SQLite connection is a file handle in this process, so waiting for
    # one never helps; it only turned a busy server into 30 s timeouts once every pooled
    # connection was taken. The real bound is the number of threads using the store at once,
    # which a server caps with its worker-thread limit and passes to Store.size_for.
    return {"pool_size": pool_size or SQLITE_POOL_SIZE, "max_overflow": -1}
