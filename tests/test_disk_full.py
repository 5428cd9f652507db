"""A full disk or a read-only folder where dk-mirror writes something other than the store's
SQLite file: the search index beside it, and the files a user asks for (export-md, snapshots,
lock files, redirected output). One line of what and one of what to do, never a traceback, and
nothing lost: the store stays whole and the index catches up once there is space.

Each command runs in a private mount namespace (tests/sandbox.py) where the folder is a tiny
tmpfs or a read-only bind mount; outside it, the folder is as it was.
"""

from __future__ import annotations

import gzip
import json
import os
import shlex
import sqlite3
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.service import Mirror

from . import sandbox
from .emulator import Fault
from .emulator_fixtures import corpus_documents, synthetic_documents

pytestmark = [pytest.mark.slow]

FULL = "the disk holding the store is full"


@pytest.fixture(autouse=True)
def _mounts() -> None:
    sandbox.require_mounts()


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "DK_MIRROR_HOME": str(tmp_path / "home")}
    env.pop("DEVELOPER_KNOWLEDGE_API_KEY", None)
    return env


def _documents(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def _one_clear_line(code: int, err: str, expected_code: int, says: str) -> None:
    assert "Traceback" not in err, err
    assert code == expected_code, (code, err)
    assert says in err, err
    assert "hint: " in err, err


def test_an_index_that_cannot_be_made_fails_the_import_and_keeps_nothing(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    index = tmp_path / "store.sqlite3-search"
    index.mkdir()
    # 4 KiB: not even the index's first files fit, so it fails before the store commits.
    code, _out, err = sandbox.run_many(
        [["import", "--sample", "--db", str(db)]], setup=sandbox.tmpfs(index, 4), env=_env(tmp_path)
    )[0]
    _one_clear_line(code, err, 1, f"{FULL}: {index} (writing the search index)")
    assert _documents(db) == 0  # all or nothing


def test_an_index_full_after_the_store_commits_keeps_the_pages_and_catches_up(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.sqlite3"
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.import_sample()
        before = mirror.stats().documents
    new = corpus_documents("tensorflow.org")[-5:]
    records = tmp_path / "new.jsonl.gz"
    with gzip.open(records, "wt", encoding="utf-8") as out:
        out.writelines(json.dumps(doc) + "\n" for doc in new)
    code, _out, err = sandbox.run_many(
        [["import", str(records), "--db", str(db)]], setup=_full_index(db), env=_env(tmp_path)
    )[0]
    assert "Traceback" not in err, err
    # The store is the record: its commit stands, and the command says the index lags.
    assert code == 0, err
    assert "indexing them failed; searches will retry" in err and FULL in err, err
    assert _documents(db) == before + len(new)
    # Outside the namespace the index folder is the one from before the import: the next
    # search finds it behind the store's change log and indexes the new pages.
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        found = mirror.search_documents(new[0]["title"]).page.results
        assert new[0]["name"] in {hit.parent for hit in found}
        assert not mirror.check_index().stale


def test_a_crawl_with_its_index_full_stores_every_page(tmp_path: Path, emulator) -> None:
    db = tmp_path / "store.sqlite3"
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.import_sample()
        before = mirror.stats().documents
    new = synthetic_documents(60)
    for doc in new:
        emulator.put(doc)
    # Three batches, one at a time, slow enough that the background indexer syncs between them.
    emulator.inject(Fault("latency", seconds=1.5), times=-1)
    env = {
        **_env(tmp_path),
        "DK_MIRROR_UPSTREAM": emulator.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": emulator.api_key,
    }
    names = [doc["name"] for doc in new]
    code, _out, err = sandbox.run_many(
        [["crawl", *names, "--depth", "0", "--concurrency", "1", "--db", str(db)]],
        setup=_full_index(db),
        env=env,
    )[0]
    # The indexer's syncs fail: a warning each, and the crawl's work stands.
    assert "Traceback" not in err, err
    assert "indexing the store's changes failed; searches will retry" in err and FULL in err, err
    assert code == 0, err
    assert _documents(db) == before + len(new)


def _full_index(db: Path) -> str:
    """Shell setup: the store's index as it was, on a 1 MiB disk filled to the brim (it opens;
    what it writes next fails)."""
    index = shlex.quote(f"{db}-search")
    kept = shlex.quote(f"{db}-search-copy")
    return (
        f"cp -r {index} {kept} && {sandbox.tmpfs(Path(f'{db}-search'), 1024)} "
        f"&& cp -r {kept}/. {index}/ && {sandbox.fill(Path(f'{db}-search'))}"
    )


@pytest.mark.parametrize("kind", ["full", "read-only"])
def test_files_a_user_asks_for_fail_in_one_line(kind: str, tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.import_sample()
        name = next(iter(mirror.list_documents(None, 1))).name
    requirements = tmp_path / "dk-mirror.toml"
    requirements.write_text(f'[docs]\nnames = ["{name}"]\n')
    out = tmp_path / "out"
    out.mkdir()
    if kind == "full":
        setup = f"{sandbox.tmpfs(out, 64)} && {sandbox.fill(out)}"
        says, hint = "No space left on device", "the disk is full"
    else:
        setup = sandbox.read_only(out)
        says, hint = "Read-only file system", "read-only"
    commands = [
        ["export-md", str(out / "md")],
        ["snapshot", "export", str(out / "docs.snap")],
        ["lock", "--requirements", str(requirements), "--output", str(out / "dk.lock")],
    ]
    results = sandbox.run_many(
        [[*c, "--db", str(db), "--offline"] for c in commands], setup=setup, env=_env(tmp_path)
    )
    for command, (code, _out, err) in zip(commands, results, strict=True):
        _one_clear_line(
            code, err, 2, f"cannot write {'snapshot ' if 'snapshot' in command else ''}"
        )
        assert says in err and hint in err, (command, err)
    if kind == "full":  # the output itself, redirected to a file on that disk (`ls > file`)
        listed = sandbox.run(
            ["ls", "--db", str(db), "--offline"],
            setup=f"{setup} && exec >{shlex.quote(str(out / 'ls.txt'))}",
            env=_env(tmp_path),
        )
        _one_clear_line(listed.returncode, listed.stderr, 2, f"cannot write the output: {says}")
    assert not any(out.iterdir())  # outside the namespace: nothing was written
    assert _documents(db) > 0
