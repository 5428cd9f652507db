"""A throwaway PostgreSQL 15 cluster for the test session: loopback only, in a temp folder.

One cluster per session (initdb takes a second or two); one template database migrated once;
each test gets `CREATE DATABASE ... TEMPLATE`, a file copy of a few megabytes. Durability is
switched off (fsync, synchronous_commit, full_page_writes): the cluster dies with the session,
so a crash can lose nothing anyone wants, and every commit stops costing an fsync.

initdb refuses to run as root (CI runs as root on a fresh Debian machine), so as root the
server runs as the `postgres` OS user that Debian's package creates, in a folder chowned to it.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Debian's postgresql-15 package; PG_BIN overrides it for other layouts.
DEFAULT_BIN = Path("/usr/lib/postgresql/15/bin")
SERVER_USER = "postgres"  # the OS user Debian's package creates
DB_USER = "dkm"  # the database superuser initdb creates; trust auth on loopback only
TEMPLATE = "dkm_template"
START_TIMEOUT_S = 60


def binaries() -> Path | None:
    """The folder with initdb, pg_ctl and postgres, or None where they are not installed."""
    folder = Path(os.environ.get("PG_BIN", DEFAULT_BIN))
    names = ("initdb", "pg_ctl", "postgres")
    return folder if all((folder / name).is_file() for name in names) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A running cluster: `url(db)` connects to a database in it, `fresh_database()` makes one."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="dk-mirror-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self._as_root = os.geteuid() == 0
        self._counter = itertools.count(1)
        self._started = False
        self._templates: set[str] = set()  # the databases `template` built

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_root:
            command = ["runuser", "-u", SERVER_USER, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False, cwd=self.root)

    def _check(self, result: subprocess.CompletedProcess[str], what: str) -> None:
        if result.returncode != 0:
            raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stderr}")

    def start(self) -> None:
        """initdb, then start the server and wait until it accepts connections."""
        if self._as_root:
            account = pwd.getpwnam(SERVER_USER)  # KeyError: no postgres user (package missing)
            os.chown(self.root, account.pw_uid, account.pw_gid)
        initdb = self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            DB_USER,
            "--auth=trust",
            "--encoding=UTF8",
            # A natural-language collation, as a team's server has (not C): name order and
            # prefix ranges must not depend on it (snapshots hash names in code-point order).
            "--locale=C.UTF-8",
            "--locale-provider=icu",
            "--icu-locale=en-US",
            "--no-sync",
        )
        self._check(initdb, "initdb")
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c port={self.port}",
                f"-c unix_socket_directories={self.root}",
                # Tests only: the cluster is thrown away, so durability buys nothing.
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                # Serve tests open pools in several processes at once.
                "-c max_connections=300",
            ]
        )
        started = self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "start",
        )
        self._started = True
        atexit.register(self.stop)  # also on a crashed session: never leave a server behind
        self._check(started, f"pg_ctl start (log: {self.root / 'server.log'})")
        self._wait_ready()

    def _wait_ready(self) -> None:
        import psycopg

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                psycopg.connect(self.dsn("postgres")).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its folder; safe to call twice."""
        if self._started:
            self._started = False
            self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        shutil.rmtree(self.root, ignore_errors=True)

    def dsn(self, database: str) -> str:
        """A libpq connection string for `database` (psycopg's own form)."""
        return f"host=127.0.0.1 port={self.port} user={DB_USER} dbname={database}"

    def url(self, database: str) -> str:
        """The SQLAlchemy URL of `database`, as a user passes it to --db."""
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{database}"

    def execute(self, statement: str, database: str = "postgres") -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        import psycopg

        with psycopg.connect(self.dsn(database), autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]  # test-made names, not input

    def create_template(self) -> None:
        """The template every test database copies: migrated to head once per session."""
        from mirror.store.db.migrate import upgrade_url

        self.execute(f"CREATE DATABASE {TEMPLATE}")
        upgrade_url(self.url(TEMPLATE))
        # A template must have no connections when it is copied; upgrade_url disposed its own.
        self.execute(f"ALTER DATABASE {TEMPLATE} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")

    def template(self, name: str, build: Callable[[str], None]) -> str:
        """Template database `name`, built on first use by `build` (given its URL, on a copy of
        the migrated template, closing what it opens); its name, for `copy_over`. As the SQLite
        templates do (store_templates.py): an import paid once per session, not per test."""
        database = f"dkm_template_{name}"
        if database not in self._templates:
            self.execute(f"CREATE DATABASE {database} TEMPLATE {TEMPLATE} STRATEGY FILE_COPY")
            build(self.url(database))
            self.execute(f"ALTER DATABASE {database} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
            self._templates.add(database)
        return database

    def copy_over(self, url: str, template: str) -> None:
        """Make the database at `url` (nothing connected to it yet) a copy of `template`."""
        name = url.rsplit("/", 1)[1]
        self.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        self.execute(f"CREATE DATABASE {name} TEMPLATE {template} STRATEGY FILE_COPY")

    def fresh_database(self, *, migrated: bool = True) -> str:
        """A new empty database (a copy of the migrated template, or blank); its URL."""
        name = f"dkm_test_{next(self._counter)}"
        # FILE_COPY: with fsync off a file copy beats WAL-logging every page (PG 15 default).
        source = f" TEMPLATE {TEMPLATE} STRATEGY FILE_COPY" if migrated else " TEMPLATE template0"
        self.execute(f"CREATE DATABASE {name}{source}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a test's database, closing whatever connections its processes left open."""
        name = url.rsplit("/", 1)[1]
        self.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
