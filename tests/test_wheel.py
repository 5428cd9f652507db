"""An installed wheel (not a checkout) can create and upgrade its store, and ships the sample."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mirror.store.schema.tables import SCHEMA_REVISION
from tests.wheel_build import build_wheel

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_carries_migrations_and_sample_and_they_work(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    members = zipfile.ZipFile(wheel).namelist()
    assert "mirror/migrations/env.py" in members
    assert any(m.startswith("mirror/migrations/versions/0001") for m in members)
    assert "mirror/sample/docs.jsonl.gz" in members
    assert "mirror/exports/zim_assets/illustration-48.png" in members  # export zim's icon

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target), "DK_MIRROR_HOME": str(tmp_path / "home")}
    db = tmp_path / "wheel.sqlite3"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import mirror, sys; print(mirror.__file__); "
            "from mirror.cli.main import main; sys.argv=['dk-mirror','db','upgrade','--db',sys.argv[1]]; "
            "main()",
            str(db),
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(str(target))
    assert f"revision {SCHEMA_REVISION}" in run.stderr
    imported = subprocess.run(
        [sys.executable, "-m", "mirror", "--db", str(db), "import", "--sample"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert imported.returncode == 0, imported.stderr
    assert "imported 50 documents" in imported.stderr


def test_every_package_of_the_source_tree_is_listed_for_the_wheel() -> None:
    """pyproject lists the packages by hand: a new package left off it is missing from every
    installed dk-mirror (the export formats were, until a wheel build showed it)."""
    import tomllib

    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "mirror").rglob("__init__.py")
    }
    found |= {"mirror.migrations", "mirror.migrations.versions"}  # mapped from migrations/
    assert found == listed
