"""`doctor` warns when the running SQLite has the WAL-reset corruption bug, and says in one
readable row what to do with a store at an older schema revision."""

from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from mirror.cli.admin import wal_reset_bug
from mirror.cli.main import cli
from mirror.store.db import engine as engines


@pytest.mark.parametrize(
    ("version", "affected"),
    [
        ("3.6.23", False),  # before WAL existed
        ("3.7.0", True),
        ("3.40.1", True),
        ("3.44.5", True),
        ("3.44.6", False),  # backport
        ("3.45.0", True),
        ("3.50.6", True),
        ("3.50.7", False),  # backport
        ("3.51.2", True),
        ("3.51.3", False),  # the fix
        ("3.52.0", False),
        ("3.53.1", False),
        ("4.0.0", False),
        ("not.a.version", False),
    ],
)
def test_wal_reset_bug_versions(version: str, affected: bool) -> None:
    assert wal_reset_bug(version) is affected


def test_doctor_warns_about_the_wal_reset_bug(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")
    assert CliRunner().invoke(cli, ["db", "upgrade"]).exit_code == 0  # doctor never makes one
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.51.2")
    warned = CliRunner().invoke(cli, ["doctor"])
    assert warned.exit_code == 0
    assert "warn  sqlite" in warned.stdout and "WAL-reset bug" in warned.stdout
    assert "3.51.3" in warned.stdout
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.51.3")
    fixed = CliRunner().invoke(cli, ["doctor"])
    assert fixed.exit_code == 0 and "WAL-reset" not in fixed.stdout


def test_doctor_says_how_to_upgrade_an_older_store_on_the_schema_row(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")
    assert CliRunner().invoke(cli, ["db", "upgrade"]).exit_code == 0
    engine = engines.create(db_url)
    with engine.begin() as conn:  # as a store written by the previous version
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0015'")
    engine.dispose()
    checked = CliRunner().invoke(cli, ["doctor"])
    assert checked.exit_code == 0, checked.output
    row = next(line for line in checked.stdout.splitlines() if line.startswith("warn  schema"))
    assert "'0015'" in row and row.endswith("(hint: run `dk-mirror db upgrade`)"), row
    assert "\\x0a" not in checked.stdout
