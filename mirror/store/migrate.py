"""Alembic, driven from code: find the migrations (checkout or wheel), read and upgrade.

Alembic is imported only when a migration has to run, so opening an up-to-date store
costs one small query rather than Alembic's import time.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import OperationalError, ProgrammingError

from ..errors import SchemaError
from .engine import WRITE
from .failures import PROBE


def script_location() -> Path:
    """The migrations folder: packaged as `mirror.migrations`, or `migrations/` in a checkout."""
    # Imported by name: setuptools maps the top-level migrations/ folder to this package.
    packaged = importlib.import_module("mirror.migrations")
    return Path(str(packaged.__file__)).parent


def current_revision(conn: Connection) -> str | None:
    """The revision stamped in the store, or None for a blank database."""
    try:
        # PROBE: a missing table is this function's answer, not a store failure.
        query = text("SELECT version_num FROM alembic_version").execution_options(**{PROBE: True})
        return conn.execute(query).scalar()
    except (OperationalError, ProgrammingError):
        # No alembic_version table yet: a blank store. (PostgreSQL aborts the transaction.)
        conn.rollback()
        return None


def _config(conn: Connection) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    # env.py uses this connection instead of creating its own engine.
    cfg.attributes["connection"] = conn
    return cfg


def known_revisions() -> list[str]:
    """Every revision the migrations define, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(script_location()))
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def upgrade(engine: Engine, target: str = "head") -> None:
    """Upgrade the store to `target` in one transaction."""
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
