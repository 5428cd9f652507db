"""Every command against every kind of unusable store: one line of what, one of what to do.

No traceback, ever, for a user's mistake or a machine's state: a PostgreSQL URL without its
driver, an unknown scheme, a file that is not SQLite, a read-only file or folder, a full disk.
The commands for one store run in one subprocess (tests/cli_batch.py: one interpreter start
instead of eighteen), in a private mount namespace where the store needs one (tests/sandbox.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import StoreError
from mirror.records import read_sample
from mirror.service import Mirror
from mirror.store.store import Store

from . import sandbox
from .cli_batch import HIDE_MODULES

NAME = read_sample()[0].name
SECRET = "pw-never-shown"
# Commands that read only snapshot files: they take no --db and never open a store.
NO_STORE = {"snapshot verify", "snapshot diff"}
# Asks upstream about a snapshot's documents; it never opens the store, so a bad --db does
# not stop it (its exit code is upstream's answer).
STORE_UNUSED = {"snapshot check"}


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    # list_commands/get_command, not .commands: the top-level group loads commands lazily.
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from _commands(command, path + " ")
        else:
            yield path, command


def _arguments(files: dict[str, Path]) -> dict[str, list[str]]:
    """Minimal valid arguments for every command that uses a store."""
    out = files["out"]
    return {
        "get": [NAME],
        "fetch": [NAME],
        "crawl": [NAME, "--depth", "0"],
        "ls": [],
        "search": ["manifest"],
        "answer": ["what is a service worker"],
        "status": [],
        "import": ["--sample"],
        "doctor": [],
        "index update": [],
        "db status": [],
        "db upgrade": [],
        "db copy": [f"sqlite:///{out / 'copy.sqlite3'}"],
        "demo": [],
        # --allow-fetch: it writes (without, it serves a read-only store and would not exit).
        "serve": ["--allow-fetch", "--port", "0"],
        "snapshot export": [str(out / "export.snap")],
        "snapshot import": [str(files["snap"])],
        "snapshot check": [str(files["snap"])],
        "lock": ["--requirements", str(files["toml"]), "--output", str(out / "x.lock")],
        "sync": ["--locked", "--lock", str(files["lock"]), "--from", str(files["snap"])],
        "export-md": [str(out / "md")],
        "export": ["md", str(out / "md2")],
        "refresh": [],
        "history": [NAME],
        "changes": ["--since", "7d"],
        "diff": [NAME, "--from", "1", "--to", "1"],
        "index check": [],
        "index rebuild": [],
        "symbols": ["chrome.storage"],
    }


# Commands that write to the store (whatever the store, they must be refused by a read-only one).
# `index check` is not one: it reads the store, as search does (the index beside a read-only
# store is checked where it can be written, tests/test_store_readonly.py).
WRITERS = {"get", "fetch", "crawl", "search", "answer", "import", "db upgrade", "db copy", "demo", "serve",
           "snapshot import", "lock", "sync", "refresh", "index rebuild",
           "index update"}  # fmt: skip


@dataclass
class Bad:
    """One unusable store: its --db value, the mount setup, and what every message says."""

    db: str
    setup: str = ""
    says: str = ""
    # A module the commands' process must not find (psycopg: installed for the PG tests).
    hide: str = ""


def _good_store(folder: Path) -> Path:
    path = folder / "store.sqlite3"
    folder.mkdir(parents=True)
    with Mirror(Settings(db_url=f"sqlite:///{path}")) as mirror:
        mirror.import_sample()
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A good store, a snapshot of it, a requirements file and its lock file (made once)."""
    tmp_path = tmp_path_factory.mktemp("files")
    source = _good_store(tmp_path / "source")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "DK_MIRROR_HOME": str(tmp_path / "home")}
    snap, toml, lock = tmp_path / "docs.snap", tmp_path / "dk-mirror.toml", tmp_path / "dk.lock"
    toml.write_text(f'[docs]\nnames = ["{NAME}"]\n')
    for args in (["snapshot", "export", str(snap)], ["lock", "--requirements", str(toml),
                 "--output", str(lock)]):  # fmt: skip
        made = sandbox.run([*args, "--db", str(source), "--offline"], env=env)
        assert made.returncode == 0, made.stderr
    return {"source": source, "out": out, "snap": snap, "toml": toml, "lock": lock}


BAD: dict[str, Callable[[Path, Path], Bad]] = {
    "postgres without its driver": lambda tmp, _src: Bad(
        f"postgresql://dk:{SECRET}@127.0.0.1:9/dk", says="dk-mirror[postgres]", hide="psycopg"
    ),
    "unknown scheme": lambda tmp, _src: Bad("foo://somewhere/db", says="'foo'"),
    "not an SQLite file": lambda tmp, _src: Bad(
        _text_file(tmp / "notes.txt"), says="is not an SQLite database"
    ),
    "read-only file": lambda tmp, src: Bad(
        str(_copy(src, tmp / "rofile")),
        setup=sandbox.read_only(tmp / "rofile" / src.name),
        says="the store is read-only",
    ),
    "read-only folder": lambda tmp, src: Bad(
        str(_copy(src, tmp / "rodir")),
        setup=sandbox.read_only(tmp / "rodir"),
        says="the store is read-only",
    ),
    "full disk": lambda tmp, src: Bad(
        str(_mkdir(tmp / "full") / src.name),
        setup=sandbox.full_disk(tmp / "full", src),
        says="the disk holding the store is full",
    ),
}


def _text_file(path: Path) -> str:
    path.write_text("meeting notes, not a database\n" * 20)
    return str(path)


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir()
    target = folder / src.name
    target.write_bytes(src.read_bytes())
    return target


def _mkdir(folder: Path) -> Path:
    folder.mkdir()
    return folder


@pytest.mark.slow
def test_every_command_is_covered() -> None:
    """A new command must be added here (and so run against every bad store below)."""
    dummy = {k: Path("/x") for k in ("out", "snap", "toml", "lock")}
    listed = {path: command for path, command in _commands(cli)}
    with_store = {p for p, c in listed.items() if any(o.name == "db" for o in c.params)}
    assert with_store == set(_arguments(dummy)) and set(listed) - with_store == NO_STORE


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(BAD))
def test_every_command_fails_cleanly_on_a_bad_store(
    kind: str, files: dict[str, Path], tmp_path: Path, emulator
) -> None:
    bad = BAD[kind](tmp_path, files["source"])
    if bad.setup:
        sandbox.require_mounts()
    env = {
        **os.environ,
        "DK_MIRROR_HOME": str(tmp_path / "home"),
        "DK_MIRROR_UPSTREAM": emulator.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": emulator.api_key,
        HIDE_MODULES: bad.hide,
    }
    arguments = _arguments(files)
    commands = sorted(arguments)
    results = sandbox.run_many(
        [[*c.split(), *arguments[c], "--db", bad.db] for c in commands], setup=bad.setup, env=env
    )
    outcomes = [(c, code, out + err) for c, (code, out, err) in zip(commands, results, strict=True)]
    read_only = bad.says == "the store is read-only"
    for command, code, output in outcomes:
        assert "Traceback" not in output, (command, output)
        assert SECRET not in output, (command, output)
        if command in STORE_UNUSED:
            continue
        if read_only and command not in WRITERS:
            assert code == 0, (command, output)  # reading a read-only store is the point
            continue
        assert code == 1, (command, code, output)
        error = next(line for line in output.splitlines() if "error:" in line or "fail " in line)
        assert bad.says in output, (command, output)
        assert "hint: " in output, (command, output)
        assert len(error) < 300, error  # one line of what happened, not a dump of SQL


def test_a_full_store_is_a_store_error_not_a_traceback(tmp_path: Path) -> None:
    """SQLITE_FULL at the store boundary: PRAGMA max_page_count caps the file in-process."""
    from sqlalchemy import event

    store = Store.open(f"sqlite:///{tmp_path / 'capped.sqlite3'}")
    try:
        with store.engine.connect() as conn:
            pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
        store.close()  # new connections get the cap below
        event.listen(
            store.engine,
            "connect",
            lambda conn, _rec: conn.execute(f"PRAGMA max_page_count={pages}"),
        )
        with pytest.raises(StoreError) as caught:
            store.put(read_sample(), fetched_at=0.0, upstream="t")
        assert "the disk holding the store is full" in caught.value.message
        assert caught.value.hint and "--db" in caught.value.hint
        assert "INSERT" not in str(caught.value)  # no SQL (and no document text) in the message
        assert store.stats().documents == 0  # all or nothing
    finally:
        store.close()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (f"postgresql://dk:{SECRET}@db.example:5432/dk", "dk-mirror[postgres]"),
        ("postgresql+nosuchdriver://db.example/dk", "unknown database driver"),
        ("mysql://db.example/dk", "'mysql'"),
        (f"postgresql://dk:{SECRET}@db.example:port/dk", "cannot be parsed"),
        ("://nothing", "cannot be parsed"),
        ("sqlite://relative.sqlite3", "Invalid SQLite URL"),
    ],
)
def test_unusable_urls_are_store_errors(
    url: str, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each is refused while creating the engine, with a hint and never the password."""
    # As on a machine without the postgres extra (psycopg is installed for the PG tests).
    monkeypatch.setitem(sys.modules, "psycopg", None)
    for readonly in (False, True):
        with pytest.raises(StoreError) as caught:
            Store.open(url, readonly=readonly)
        assert says in str(caught.value) and caught.value.hint  # str: message and hint
        assert SECRET not in str(caught.value)
