"""Alembic, driven from code: find the migrations (checkout or wheel), read and upgrade.

Alembic is imported only when a migration has to run, so opening an up-to-date store
costs one small query rather than Alembic's import time.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from ...errors import SchemaError
from . import sql
from .engine import WRITE
from .failures import PROBE


def script_location() -> Path:
    """The migrations folder: `migrations/` beside the package in a checkout, else the packaged
    `mirror.migrations` of an installed wheel."""
    # A checkout run from its own folder (PYTHONPATH, a clone) must use its own revisions, not
    # those an editable install of another checkout maps `mirror.migrations` to.
    checkout = Path(__file__).resolve().parents[3] / "migrations"  # mirror/store/db/ -> root
    if (checkout / "env.py").is_file():
        return checkout
    # Imported by name: setuptools maps the top-level migrations/ folder to this package.
    packaged = importlib.import_module("mirror.migrations")
    return Path(str(packaged.__file__)).parent


def current_revision(conn: Connection) -> str | None:
    """The revision stamped in the store, or None for a blank database."""
    try:
        # PROBE: a missing table is this function's answer, not a store failure.
        query = text(sql.REVISION).execution_options(**{PROBE: True})
        return conn.execute(query).scalar()
    except (OperationalError, ProgrammingError):
        # No alembic_version table yet: a blank store. (PostgreSQL aborts the transaction.)
        conn.rollback()
        return None


def _config(conn: Connection) -> Any:
    _quiet_alembic()
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    # env.py uses this connection instead of creating its own engine.
    cfg.attributes["connection"] = conn
    return cfg


def known_revisions() -> list[str]:
    """Every revision the migrations define, oldest first."""
    _quiet_alembic()
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(script_location()))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def _quiet_alembic() -> None:
    # Alembic narrates every step at INFO ("Context impl SQLiteImpl.", "Running upgrade ...").
    # Migrating is routine here, so a server's log (INFO) would open with a dozen such lines;
    # a level someone set on purpose is left alone.
    alembic_log = logging.getLogger("alembic")
    if alembic_log.level == logging.NOTSET:
        alembic_log.setLevel(logging.WARNING)


def upgrade(engine: Engine, target: str = "head") -> None:
    """Upgrade the store to `target` in one transaction."""
    # Before alembic's first import: from 1.16 its import announces each plugin at INFO.
    _quiet_alembic()
    from alembic import command

    with engine.connect().execution_options(**{WRITE: True}) as conn:
        found = current_revision(conn)
        conn.rollback()  # end the read's transaction; the upgrade takes the write lock below
        if found is not None and found not in known_revisions():
            raise SchemaError(
                f"the store is at schema revision {found!r}, which this dk-mirror does not know",
                hint="upgrade dk-mirror, or point --db at another store",
            )
        with conn.begin():
            command.upgrade(_config(conn), target)


@dataclass(frozen=True, slots=True)
class SchemaStatus:
    """The store's schema revision and the newest this version of dk-mirror knows."""

    current: str | None
    head: str

    @property
    def up_to_date(self) -> bool:
        """True when no upgrade is needed."""
        return self.current == self.head

    def to_json(self) -> dict[str, Any]:
        """As `db status --json` prints it."""
        return {"current": self.current, "head": self.head, "upToDate": self.up_to_date}


def schema_status(url: str) -> SchemaStatus:
    """The schema status of the store at `url`, read without upgrading (or creating) it."""
    from .engine import create

    engine = create(url, readonly=True)
    try:
        with engine.connect() as conn:
            current = current_revision(conn)
    finally:
        engine.dispose()
    return SchemaStatus(current, known_revisions()[-1])


def upgrade_url(url: str) -> None:
    """Upgrade the store at `url` to the newest revision."""
    from .engine import create

    engine = create(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()
