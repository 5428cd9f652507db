"""Engine creation: one place that knows about connection settings and SQLite pragmas."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from ...errors import StoreError
from . import compression
from .disk import WHERE
from .failures import READ_ONLY_HINT, from_dbapi, on_error

log = logging.getLogger("mirror.store")

# Milliseconds a connection waits for another writer's lock before failing with "locked".
BUSY_TIMEOUT_MS = 5000
# Seconds a writer waits its turn behind another (an import holds the write lock for as long
# as it runs: minutes for a large file) before it gives up: it tries again every busy timeout.
WRITER_PATIENCE_S = 3600.0
# Execution option that marks a connection as a writer (its BEGIN takes the write lock).
WRITE = "dk_mirror_write"
# What the WAL file is cut back to after a checkpoint (journal_size_limit).
WAL_KEEP_BYTES = 64 << 20
# Page cache (KiB) for one bulk write: an import inserts at random into the documents' name
# index and the versions' tables; with SQLite's default 2 MB those pages are read again from
# the OS at every batch once the store is large. 64 MB was 10% faster importing 100k pages into
# a 100k store than 16 MB, but is a third of the import's 200 MB memory budget (tantivy
# indexes beside it, and maps its segment files while merging). 100k pages into an empty
# store (native_memory's fixed mmap threshold on): 32 MB peaked at 204 MB RSS, 16 MB at 182 MB
# and 6-9% slower; into the 1M store, 16 MB peaked at 193-199 MB.
BULK_CACHE_KIB = 16 << 10
# Connections a SQLite pool keeps open between uses, unless the owner sizes it (Store.size_for).
# They are opened lazily, so a one-shot CLI command still opens one or two.
SQLITE_POOL_SIZE = 8

# The databases the schema and its migrations are written for.
BACKENDS = ("sqlite", "postgresql")
# Where each backend's driver comes from, for the error when it is missing.
INSTALL = {"postgresql": "pip install 'dk-mirror[postgres]'"}


def _on_sqlite_connect(dbapi_connection: Any, _record: Any, *, readonly: bool = False) -> None:
    # Let SQLAlchemy's begin event issue BEGIN itself; pysqlite's implicit BEGIN would start
    # transactions late (at the first write) and as DEFERRED, inviting SQLITE_BUSY upgrades.
    dbapi_connection.isolation_level = None
    # The search view and triggers read the compressed Markdown through dk_inflate.
    compression.register(dbapi_connection)
    cursor = dbapi_connection.cursor()
    try:
        if not readonly:
            # WAL: readers never block the writer and vice versa (browse while fetching).
            # The pragma answers with the mode in force; :memory: and some filesystems refuse
            # WAL. A read-only connection may not change the mode (it is the writer's choice).
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
        if not readonly:
            # An import is one transaction, so the WAL grows to its size (GBs for a large
            # file); past a checkpoint SQLite reuses the file but never shrinks it unless told.
            cursor.execute(f"PRAGMA journal_size_limit={WAL_KEEP_BYTES}")
    finally:
        cursor.close()


@contextmanager
def bulk_write(conn: Connection) -> Iterator[None]:
    """A larger page cache on `conn` (a writer, before its BEGIN) for one bulk write."""
    if conn.dialect.name != "sqlite":
        yield
        return
    # On the DBAPI connection: through SQLAlchemy the pragma would begin a transaction.
    raw = conn.connection.driver_connection
    assert raw is not None
    before = raw.execute("PRAGMA cache_size").fetchone()[0]
    raw.execute(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
    try:
        yield
    finally:
        # After Ctrl-C SQLAlchemy has closed the connection (its state was unknown): there is
        # nothing to restore, and the interrupt, not a closed-database error, is what happened.
        with suppress(sqlite3.ProgrammingError):
            raw.execute(f"PRAGMA cache_size={before}")


def _on_sqlite_begin(conn: Any) -> None:
    # Writers take the write lock up front (IMMEDIATE), so two writers queue on busy_timeout
    # rather than deadlocking when both try to upgrade a read lock. Readers issue a plain
    # (deferred) BEGIN so that several statements see one snapshot.
    if conn.get_execution_options().get(WRITE):
        _begin_writing(conn)
    else:
        conn.exec_driver_sql("BEGIN")


def _begin_writing(conn: Any) -> None:
    """BEGIN IMMEDIATE, waiting for the write lock as long as another writer holds it (up to
    WRITER_PATIENCE_S): a long import is another writer's turn, not a failure of this one."""
    raw = conn.connection.driver_connection
    deadline = time.monotonic() + WRITER_PATIENCE_S
    said = False
    while True:
        try:
            raw.execute("BEGIN IMMEDIATE")  # waits up to busy_timeout inside SQLite
            return
        except raw.OperationalError as exc:  # sqlite3's, whichever module opened it
            where = describe(conn.engine.url)
            if getattr(exc, "sqlite_errorname", "") != "SQLITE_BUSY":
                raise from_dbapi(exc, where) from None
            if time.monotonic() >= deadline:
                raise from_dbapi(exc, where) from None
            if not said:
                said = True
                log.warning(
                    "the store is being written by another dk-mirror (an import, a crawl); "
                    "waiting for it to finish: %s",
                    where,
                )


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


def create(url: str | URL, *, pool_size: int | None = None, readonly: bool = False) -> Engine:
    """An engine for `url`, with the pragmas and transaction handling this store relies on.

    `pool_size`: connections kept open for reuse (the owner's concurrency); None: the default.
    `readonly`: the store must exist and is only read (SQLite opens it `mode=ro`).
    """
    parsed = _parse(url)
    backend = parsed.get_backend_name()
    if backend not in BACKENDS:
        raise StoreError(
            f"dk-mirror cannot keep its store in {backend!r} databases (from {WHERE})",
            hint="give a path to an SQLite file, or a postgresql://USER@HOST/DB URL",
        )
    where = describe(url)
    if backend == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            if readonly:
                parsed = _read_only_url(Path(database))
            else:
                _check_writable(Path(database))
                _create_private(Path(database))
        engine = _engine(parsed, backend, **_sqlite_pool_args(database, pool_size))
        event.listen(engine, "connect", partial(_on_sqlite_connect, readonly=readonly))
        event.listen(engine, "begin", _on_sqlite_begin)
    else:
        sized = {} if pool_size is None else {"pool_size": pool_size}
        engine = _engine(parsed, backend, pool_pre_ping=True, **sized)
    # Every database failure on this engine surfaces as a StoreError naming the store.
    event.listen(engine, "handle_error", partial(on_error, where=where))
    return engine


def in_memory(database: str | None) -> bool:
    """Whether an SQLite URL's database is in memory (one per thread: SingletonThreadPool)."""
    return not database or database == ":memory:" or "mode=memory" in database


def one_thread(engine: Engine) -> bool:
    """Whether `engine` is an in-memory SQLite database, which each thread sees its own of."""
    return engine.dialect.name == "sqlite" and in_memory(engine.url.database)


def _sqlite_pool_args(database: str | None, pool_size: int | None) -> dict[str, Any]:
    """Pool arguments for a SQLite database file (an in-memory one keeps its own pool)."""
    if in_memory(database):
        return {}
    # No overflow limit: a SQLite connection is a file handle in this process, so waiting for
    # one never helps; it only turned a busy server into 30 s timeouts once every pooled
    # connection was taken. The real bound is the number of threads using the store at once,
    # which a server caps with its worker-thread limit and passes to Store.size_for.
    return {"pool_size": pool_size or SQLITE_POOL_SIZE, "max_overflow": -1}


def describe(url: str | URL) -> str:
    """The store for messages: an SQLite file's path, else the URL without its password."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return "the --db value"
    database = parsed.database or ""
    if parsed.get_backend_name() == "sqlite" and database not in ("", ":memory:"):
        if database.startswith("file:") and parsed.query.get("uri"):
            return unquote(database.removeprefix("file:"))
        return database
    return parsed.render_as_string(hide_password=True)


def display_url(engine: Engine) -> str:
    """The URL the user gave, as `status` shows it (a read-only open's URI options dropped)."""
    url = engine.url
    database = url.database or ""
    if url.get_backend_name() == "sqlite" and database.startswith("file:") and url.query:
        return "sqlite:///" + unquote(database.removeprefix("file:"))
    return url.render_as_string(hide_password=True)


def writable(url: str) -> bool:
    """Whether the store at `url` can be written (an SQLite file and its folder; others: yes)."""
    parsed = _parse(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return True
    path = Path(unquote(database.removeprefix("file:")))
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def exists_read_only(url: str) -> bool:
    """Whether `url` names an existing SQLite store that cannot be written (a read-only file,
    folder or mount): a reading server then opens it read-only instead of refusing."""
    parsed = _parse(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return False
    path = Path(unquote(database.removeprefix("file:")))
    return path.is_file() and not writable(url)


def _parse(url: str | URL) -> URL:
    try:
        return make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is not a number
        # The value may hold a password: name only its scheme.
        text = str(url)
        scheme = text.split("://", 1)[0] if "://" in text else ""
        raise StoreError(
            f"the store URL ({scheme}://...) from {WHERE} cannot be parsed",
            hint="give a path to an SQLite file, or a URL such as postgresql://USER@HOST/DB",
        ) from None


def _engine(url: URL, backend: str, **options: Any) -> Engine:
    try:
        return create_engine(url, **options)
    except ImportError as exc:
        raise StoreError(
            f"{backend} support is not installed (no Python module {exc.name!r})",
            hint=INSTALL.get(backend, f"install the driver module {exc.name!r}"),
        ) from None
    except NoSuchModuleError:
        raise StoreError(
            f"unknown database driver {url.drivername!r} in {WHERE}",
            hint="use postgresql://USER@HOST/DB (the psycopg driver) or a path to an SQLite file",
        ) from None
    except ArgumentError as exc:
        # The dialect refuses the URL's shape (sqlite://relative); its first line says how.
        reason = str(exc).splitlines()[0]
        raise StoreError(
            f"the store URL from {WHERE} is not valid: {reason}",
            hint="give a path to an SQLite file, or a URL such as postgresql://USER@HOST/DB",
        ) from None


def _not_a_folder(path: Path) -> None:
    # Reads and writes say the same thing (SQLite alone says "unable to open database file").
    if path.is_dir():
        raise StoreError(
            f"{path} is a folder, not a store", hint=f"point {WHERE} at the store's .sqlite3 file"
        )


def _check_writable(path: Path) -> None:
    _not_a_folder(path)
    # Writing needs the file and its folder: SQLite creates the -wal and -shm files (or a
    # rollback journal) beside the store. Checked up front, so a command that writes says so
    # before it fetches anything, rather than failing at its first write.
    folder = path.parent
    if path.exists() and not (os.access(path, os.W_OK) and os.access(folder, os.W_OK)):
        raise StoreError(f"the store is read-only: {path}", hint=READ_ONLY_HINT)
    if path.exists():
        _writable_siblings(path)
    if not path.exists() and folder.is_dir() and not os.access(folder, os.W_OK):
        raise StoreError(
            f"cannot create a store in {folder}: the folder is read-only",
            hint="set DK_MIRROR_HOME or --db to a writable location",
        )


def _writable_siblings(path: Path) -> None:
    """Give the store's -wal and -shm files back the write permission the store file has.

    SQLite creates them with the database file's permissions: read while the file was
    read-only (chmod 444), the store keeps a read-only -shm after the file is made writable
    again, and every write then fails "attempt to write a readonly database". Ours are
    fixed; another user's are named.
    """
    mode = stat.S_IMODE(path.stat().st_mode)
    me = os.getuid() if hasattr(os, "getuid") else None  # POSIX: whose files we may chmod
    for sibling in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            owner = sibling.stat().st_uid
        except OSError:
            continue  # none (no connection open), or gone meanwhile
        if os.access(sibling, os.W_OK):
            continue
        if me is not None and owner != me:
            raise StoreError(
                f"the store's {sibling.name} file is read-only (another user's): {sibling}",
                hint=f"let this user write it (chmod or chown {sibling}), or delete it when "
                "no program has the store open",
            )
        with suppress(OSError):  # gone meanwhile: SQLite makes a new one
            os.chmod(sibling, mode)


def _read_only_url(path: Path) -> URL:
    """An SQLite URI that opens `path` read-only, and immutable where nothing can write it."""
    if not path.exists():
        raise StoreError(
            f"no store at {path}",
            hint=f"check {WHERE}: this command only reads a store and does not create one "
            "(`dk-mirror fetch` or `dk-mirror import` create one)",
        )
    _not_a_folder(path)
    query = {"mode": "ro", "uri": "true"}
    if not os.access(path.parent, os.W_OK):
        # In a read-only folder SQLite cannot create the -shm file a WAL reader needs, and
        # fails "unable to open database file". immutable=1 reads the file without locks or
        # -shm; safe because nothing can write here (no writer can create its -wal either).
        # But a -wal a writer left behind holds committed changes immutable would not see:
        # with its -shm, mode=ro reads both; without, SQLite cannot read them here at all.
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        if not (wal.exists() and wal.stat().st_size > 0):
            query["immutable"] = "1"
        elif not shm.exists():
            raise StoreError(
                f"the store's last writer left changes in {wal}, which SQLite cannot read "
                "in a read-only folder without its -shm file",
                hint="open the store once where its folder is writable (any dk-mirror command "
                "there folds the changes in), or copy the folder to a writable place",
            )
    # The path is percent-encoded: SQLite URIs give ?, # and % their own meaning.
    return URL.create("sqlite", database="file:" + quote(str(path)), query=query)
