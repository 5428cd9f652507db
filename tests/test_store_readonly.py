"""Read-only stores: a read-only file, folder or mount is read; writes say the store is read-only.

Real SQLite files, real `dk-mirror` subprocesses, real read-only mounts (tests/sandbox.py).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.errors import SchemaError, StoreError
from mirror.records import read_sample
from mirror.service import Mirror
from mirror.store.db import compression
from mirror.store.db import engine as engines
from mirror.store.db.migrate import upgrade
from mirror.store.schema.tables import SCHEMA_REVISION
from mirror.store.store import Store

from . import sandbox

NAME = read_sample()[0].name


def _make_store(path: Path) -> Path:
    """A store holding the shipped sample, closed cleanly (no -wal or -shm left)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with Mirror(Settings(db_url=f"sqlite:///{path}")) as mirror:
        mirror.import_sample()
    assert sorted(p.name for p in path.parent.iterdir()) == _beside(path)
    return path


def _beside(store: Path) -> list[str]:
    """What a closed store leaves in its folder: the file and its search index's folder."""
    return [store.name, store.name + "-search"]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "DK_MIRROR_HOME": str(tmp_path / "home")}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """The sample store, alone in its folder."""
    return _make_store(tmp_path / "ro" / "store.sqlite3")


def test_reading_commands_work_in_a_read_only_folder(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    setup = sandbox.read_only(store.parent)
    out = tmp_path / "out"
    out.mkdir()
    env = _env(tmp_path)
    db = ["--db", str(store)]
    status = sandbox.run(["status", "--json", *db], setup=setup, env=env)
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["documents"] == len(read_sample())
    got = sandbox.run(["get", "--offline", *db, NAME], setup=setup, env=env)
    assert got.returncode == 0 and got.stdout.startswith("# "), got.stderr
    for args in (
        ["ls", "--limit", "3"],
        ["search", "--offline", "manifest"],
        ["answer", "--offline", "what is a service worker"],
        ["db", "status"],
        ["snapshot", "export", str(out / "docs.snap")],
        ["export-md", str(out / "md")],
    ):
        result = sandbox.run([*args, *db], setup=setup, env=env)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    doctor = sandbox.run(["doctor", "--offline", *db], setup=setup, env=env)
    # No warning about the store (this machine's SQLite may have the WAL-reset bug: that
    # warning is about the library, not the store, and tests/test_doctor.py covers it).
    rows = doctor.stdout.splitlines()
    warnings = [r for r in rows if r.startswith("warn") and "WAL-reset" not in r]
    assert doctor.returncode == 0 and not warnings, doctor.stdout
    assert "opened immutable" in doctor.stdout
    assert (out / "docs.snap").is_file() and (out / "md" / "index.md").is_file()
    # Nothing was created beside the store: no -wal, no -shm, no journal.
    assert sorted(p.name for p in store.parent.iterdir()) == _beside(store)
    # Search used a copy of the index in the cache folder (tantivy cannot open a read-only one).
    assert list((tmp_path / "home" / "cache" / "search").iterdir())


@pytest.mark.parametrize("user_cache", ["writable", "read-only"])
def test_a_read_only_home_holding_the_store_is_searched(user_cache: str, tmp_path: Path) -> None:
    """DK_MIRROR_HOME itself on the read-only volume (a CI cache mounted read-only): the
    index copy goes to the user cache folder, or, if that is read-only too, to a private
    folder in the temporary folder."""
    sandbox.require_mounts()
    home = tmp_path / "home"
    store = _make_store(home / "dk-mirror.sqlite3")
    xdg, temp = tmp_path / "xdg", tmp_path / "tmp"
    xdg.mkdir()
    temp.mkdir()
    setup = sandbox.read_only(home)
    if user_cache == "read-only":
        setup += " && " + sandbox.read_only(xdg)
    env = {**_env(tmp_path), "DK_MIRROR_HOME": str(home), "XDG_CACHE_HOME": str(xdg),
           "TMPDIR": str(temp)}  # fmt: skip
    found = sandbox.run(["search", "--offline", "manifest"], setup=setup, env=env)
    assert found.returncode == 0 and "1. " in found.stdout, found.stderr
    assert "Traceback" not in found.stderr
    used = xdg / "dk-mirror" if user_cache == "writable" else temp / f"dk-mirror-{os.getuid()}"
    assert list((used / "search").iterdir()), found.stderr
    assert sorted(p.name for p in home.iterdir()) == _beside(store)


def test_a_server_that_does_not_fetch_serves_a_read_only_store(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    setup = sandbox.read_only(store.parent)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "get_documents", "arguments": {"names": [NAME]}}},
    ]  # fmt: skip
    lines = "".join(json.dumps(r) + "\n" for r in requests)
    db = ["--db", str(store)]
    served = sandbox.run(["serve", "--stdio", *db], setup=setup, env=_env(tmp_path), input=lines)
    assert served.returncode == 0, served.stderr
    answers = {m["id"]: m for m in map(json.loads, served.stdout.splitlines())}
    result = answers[2]["result"]
    assert not result.get("isError") and result["structuredContent"]["documents"][0]["name"] == NAME
    assert sorted(p.name for p in store.parent.iterdir()) == _beside(store)  # nothing created
    # A server that may fetch would write: it is refused, saying why.
    fetching = sandbox.run(
        ["serve", "--stdio", "--allow-fetch", *db], setup=setup, env=_env(tmp_path), input=""
    )
    assert fetching.returncode == 1 and "the store is read-only" in fetching.stderr
    assert "Traceback" not in fetching.stderr


def test_writing_commands_say_the_store_is_read_only(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    env = _env(tmp_path)
    for setup in (sandbox.read_only(store.parent), sandbox.read_only(store)):
        for args in (["import", "--sample"], ["fetch", NAME], ["get", NAME], ["db", "upgrade"]):
            result = sandbox.run([*args, "--db", str(store)], setup=setup, env=env)
            assert result.returncode == 1, (args, result.stderr)
            lines = result.stderr.splitlines()
            assert lines[0] == f"error: the store is read-only: {store}", result.stderr
            assert lines[1].startswith("  hint: ") and "--db" in lines[1]


def test_read_only_file_in_a_writable_folder_is_read(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    result = sandbox.run(
        ["get", "--offline", "--db", str(store), NAME],
        setup=sandbox.read_only(store),
        env=_env(tmp_path),
    )
    assert result.returncode == 0 and result.stdout.startswith("# "), result.stderr


def test_a_store_read_while_read_only_is_written_once_writable_again(
    store: Path, tmp_path: Path
) -> None:
    """SQLite gives the -wal and -shm files a reader creates the store file's permissions: a
    search while the file was chmod 444 left a read-only -shm, and every write after the
    file was made writable again failed "the store is read-only"."""
    sandbox.require_permission_bits()
    env = _env(tmp_path)
    store.chmod(0o444)
    read = sandbox.run(["search", "--offline", "--db", str(store), "manifest"], env=env,
                       command=sandbox.as_user())  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert Path(f"{store}-shm").stat().st_mode & 0o200 == 0  # the read left it read-only
    store.chmod(0o644)
    records = tmp_path / "more.jsonl"
    records.write_text(json.dumps({**read_sample()[0].to_api(), "title": "written again"}) + "\n")
    wrote = sandbox.run(["import", str(records), "--overwrite", "--db", str(store)], env=env,
                        command=sandbox.as_user())  # fmt: skip
    assert wrote.returncode == 0, wrote.stderr
    got = sandbox.run(["get", "--offline", "--json", "--db", str(store), NAME], env=env)
    assert json.loads(got.stdout)["documents"][0]["title"] == "written again"


def test_another_users_read_only_shm_is_named(store: Path, tmp_path: Path) -> None:
    sandbox.require_permission_bits()
    if os.geteuid() != 0:
        pytest.skip("making a file another user's needs root")
    env = _env(tmp_path)
    read = sandbox.run(["status", "--db", str(store)], env=env)  # leaves no -shm: make one
    assert read.returncode == 0, read.stderr
    shm = Path(f"{store}-shm")
    shm.write_bytes(b"")
    shm.chmod(0o444)
    os.chown(shm, 65534, 65534)  # nobody's
    wrote = sandbox.run(["import", "--sample", "--overwrite", "--db", str(store)], env=env,
                        command=sandbox.as_user())  # fmt: skip
    assert wrote.returncode == 1 and "Traceback" not in wrote.stderr, wrote.stderr
    assert f"the store's {shm.name} file is read-only (another user's)" in wrote.stderr
    assert "hint: " in wrote.stderr


def test_an_index_made_read_only_by_its_permissions_is_searched(
    store: Path, tmp_path: Path
) -> None:
    """A store whose search index this user may not write (chmod -R a-w, another user's
    files): the index is copied to the cache folder, and the copy must be writable."""
    sandbox.require_permission_bits()
    index = Path(f"{store}-search")
    for path in [index, *index.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        found = sandbox.run(["search", "--offline", "--db", str(store), "manifest"],
                            env=_env(tmp_path), command=sandbox.as_user())  # fmt: skip
    finally:
        for path in [index, *index.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    assert "Traceback" not in found.stderr, found.stderr
    assert found.returncode == 0 and "1. " in found.stdout, found.stderr


def _leave_wal(store: Path, target: Path, *, with_shm: bool) -> None:
    """Copy `store` to `target` as a writer that never checkpointed would leave it."""
    target.parent.mkdir(parents=True)
    conn = sqlite3.connect(store)
    compression.register(conn)  # as a dk-mirror writer: the search triggers read through it
    conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.execute("UPDATE documents SET title = 'changed in the wal' WHERE name = ?", (NAME,))
    conn.commit()
    # Copied while the writer is still open: its committed change lives only in the -wal.
    for suffix in ("", "-wal", *(["-shm"] if with_shm else [])):
        shutil.copy(f"{store}{suffix}", f"{target}{suffix}")
    conn.close()
    assert Path(f"{target}-wal").stat().st_size > 0


def test_a_wal_left_behind_is_read_not_ignored(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    target = tmp_path / "left" / "store.sqlite3"
    _leave_wal(store, target, with_shm=True)
    result = sandbox.run(
        ["ls", "--json", "--prefix", NAME, "--limit", "1", "--db", str(target)],
        setup=sandbox.read_only(target.parent),
        env=_env(tmp_path),
    )
    # immutable=1 would read the main file alone and show the old title.
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["title"] == "changed in the wal"


def test_a_wal_left_without_its_shm_is_a_clear_error(store: Path, tmp_path: Path) -> None:
    sandbox.require_mounts()
    target = tmp_path / "left" / "store.sqlite3"
    _leave_wal(store, target, with_shm=False)
    result = sandbox.run(
        ["status", "--db", str(target)],
        setup=sandbox.read_only(target.parent),
        env=_env(tmp_path),
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"left changes in {target}-wal" in result.stderr and "hint:" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["get", "--offline", NAME],
        ["ls"],
        ["search", "--offline", "x"],
        ["doctor"],
        ["db", "status"],
        ["snapshot", "export", "OUT/docs.snap"],
        ["export-md", "OUT/md"],
    ],
)
def test_reading_a_mistyped_path_creates_nothing(args: list[str], tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "store.sqlite3"
    out = tmp_path / "out"
    out.mkdir()
    args = [a.replace("OUT", str(out)) for a in args]
    result = sandbox.run([*args, "--db", str(missing)], env=_env(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    # doctor reports it in its table (stdout); the others as an error (stderr).
    assert f"no store at {missing}" in result.stderr + result.stdout
    assert not missing.parent.exists() and not (tmp_path / "home").exists()


def test_read_only_open_never_sets_the_journal_mode(store: Path) -> None:
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    opened = Store.open(f"sqlite:///{store}", readonly=True)
    try:
        assert opened.stats().documents == len(read_sample())
        assert opened.journal_mode() == "delete"
        with pytest.raises(StoreError, match="read-only"):
            opened.put(read_sample()[:1], fetched_at=0.0, upstream="t")
    finally:
        opened.close()
    # Byte 18 of the header is 1 for a rollback journal, 2 for WAL: still 1.
    assert store.read_bytes()[18] == 1


def test_old_schema_is_upgraded_where_writable_and_refused_where_read_only(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old" / "store.sqlite3"
    path.parent.mkdir()
    url = f"sqlite:///{path}"
    engine = engines.create(url)
    upgrade(engine, "0001")
    engine.dispose()
    assert os.listdir(path.parent) == [path.name]  # as a writer closing cleanly leaves it
    sandbox.require_mounts()
    refused = sandbox.run(
        ["status", "--db", str(path)], setup=sandbox.read_only(path.parent), env=_env(tmp_path)
    )
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "'0001'" in refused.stderr and "read-only" in refused.stderr
    assert "dk-mirror db upgrade" in refused.stderr
    # Writable: a reading command upgrades it, as opening a store always has.
    opened = Store.open(url, readonly=True)
    try:
        assert opened.revision() == SCHEMA_REVISION
    finally:
        opened.close()
    # upgrade=False (doctor) reports the revision instead of changing it.
    engine = engines.create(url)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '0001'")
    engine.dispose()
    with pytest.raises(SchemaError, match="'0001'"):
        Store.open(url, readonly=True, upgrade=False)
