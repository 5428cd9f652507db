"""Migrations from a blank database give exactly the schema the code expects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sqlalchemy import MetaData, create_engine, inspect

from mirror.store import Store
from mirror.store.migrate import known_revisions
from mirror.store.schema import SCHEMA_REVISION, metadata


def _shape(url: str) -> dict[str, list[tuple[str, str, bool, bool]]]:
    engine = create_engine(url)
    try:
        reflected = MetaData()
        reflected.reflect(engine)
        insp = inspect(engine)
        out = {}
        for table in reflected.sorted_tables:
            pk = set(insp.get_pk_constraint(table.name)["constrained_columns"])
            out[table.name] = [
                (c.name, str(c.type), bool(c.nullable), c.name in pk) for c in table.columns
            ]
        return out
    finally:
        engine.dispose()


def test_code_expects_the_newest_migration() -> None:
    assert known_revisions()[-1] == SCHEMA_REVISION


def test_blank_database_migrates_to_the_code_schema(tmp_path: Path) -> None:
    migrated = f"sqlite:///{tmp_path / 'migrated.sqlite3'}"
    Store.open(migrated).close()
    direct = f"sqlite:///{tmp_path / 'direct.sqlite3'}"
    engine = create_engine(direct)
    metadata.create_all(engine)
    engine.dispose()
    got = _shape(migrated)
    assert got.pop("alembic_version")
    assert got == _shape(direct)


def test_reopening_does_not_migrate_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    Store.open(url).close()
    code = "import sys, mirror.store as s; s.Store.open(sys.argv[1]).close(); print('alembic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"  # an up-to-date store never imports Alembic
