"""Damage drills on SQLite's search index, on real processes: a garbled meta.json, truncated
segment files, a store file restored from an older copy, an index folder from another store.

The CLI rebuilds, then answers (its first search is a real answer, never an empty one); a
running `dk-mirror serve` rebuilds too and answers from the rebuilt index on REST, MCP and the
browser, or says the index is rebuilding (503 with Retry-After, an MCP tool error) until it is.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from mirror.config import Settings
from mirror.models import Document
from mirror.service import Mirror
from tests.conftest import seed
from tests.serve_process import clean_env, serve

# Damage is found by `dk-mirror` commands and servers run in processes of their own (slow).
pytestmark = [pytest.mark.sqlite_only, pytest.mark.slow]

CORPUS = Path(__file__).resolve().parent / "data" / "corpus" / "tensorflow.org.jsonl.gz"
KERAS = ""  # the first result for "keras" on the intact index (set by `template`)


def _env(home: Path) -> dict[str, str]:
    return clean_env(home)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a store of the 99 TensorFlow pages and its index, built once."""
    folder = tmp_path_factory.mktemp("template")
    with Mirror(Settings(db_url=f"sqlite:///{folder / 'store.sqlite3'}", offline=True)) as mirror:
        mirror.import_file(CORPUS)
        results = mirror.search_documents("keras").page.results
    # Whatever the ranking puts first for "keras" on the intact index is what every search
    # after the damage must put first too.
    global KERAS
    KERAS = results[0].parent
    return folder


@pytest.fixture
def store(template: Path, tmp_path: Path) -> Path:
    """A copy of the template store (with its index) for this test; the store file's path."""
    shutil.copytree(template, tmp_path / "s")
    return tmp_path / "s" / "store.sqlite3"


def _index(db: Path) -> Path:
    return db.with_name(db.name + "-search")


def _garble_meta(db: Path) -> None:
    (_index(db) / "shard-0" / "meta.json").write_text("garbage")


def _truncate_segments(db: Path) -> None:
    segments = [p for p in (_index(db) / "shard-0").iterdir() if p.suffix in (".idx", ".term")]
    assert segments
    for path in segments:
        with open(path, "r+b") as file:
            file.truncate(10)


def _otters(names: list[str]) -> list[Document]:
    """New copies of these pages that now speak of otters (a word no TensorFlow page has)."""
    return [
        Document(
            name=n,
            uri="https://" + n.removeprefix("documents/"),
            content="# Otters\n\nSea otters hold hands: zyzzyvaquokka.",
        )
        for n in names
    ]


def _write(db: Path, docs: list[Document]) -> None:
    with Mirror(Settings(db_url=f"sqlite:///{db}")) as mirror:
        seed(mirror, docs, fetched_at=time.time())


def _restore_older_copy(db: Path) -> None:
    """The store moves on (two pages rewritten, indexed), then its file is copied back from
    the copy taken before: the index holds the rewritten pages, the store the old ones."""
    older = db.with_name("older.sqlite3")
    shutil.copy(db, older)
    _write(db, _otters([KERAS, "documents/www.tensorflow.org/hub/caching"]))
    _search_cli(db, "zyzzyvaquokka")  # indexed
    shutil.copy(older, db)
    for suffix in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(str(db) + suffix)


def _index_of_another_store(db: Path) -> None:
    """The index folder replaced by another store's (one with otter pages only)."""
    other = db.with_name("other.sqlite3")
    _write(other, _otters([f"documents/example.dev/otter{i}" for i in range(150)]))
    _search_cli(other, "zyzzyvaquokka")
    shutil.rmtree(_index(db))
    shutil.copytree(_index(other), _index(db))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbled meta.json": _garble_meta,
    "truncated segments": _truncate_segments,
    "older store file": _restore_older_copy,
    "another store's index": _index_of_another_store,
}


def _search_cli(db: Path, query: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mirror", "search", "--offline", "--json", "--db", str(db), query],
        capture_output=True,
        text=True,
        env=_env(db.parent / "home"),
        timeout=120,
    )


def _parents(result: dict[str, Any]) -> list[str]:
    return [chunk["parent"] for chunk in result.get("results", [])]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_the_first_cli_search_after_damage_rebuilds_then_answers(store: Path, damage: str) -> None:
    assert _parents(json.loads(_search_cli(store, "keras").stdout))[0] == KERAS
    DAMAGE[damage](store)
    first = _search_cli(store, "keras")
    assert first.returncode == 0, first.stderr
    assert _parents(json.loads(first.stdout))[0] == KERAS, first.stderr
    # Nothing of what the index held and the store does not (rewritten pages, other pages).
    assert _parents(json.loads(_search_cli(store, "zyzzyvaquokka").stdout)) == []
    check = subprocess.run(
        [sys.executable, "-m", "mirror", "index", "check", "--db", str(store)],
        capture_output=True,
        text=True,
        env=_env(store.parent / "home"),
        timeout=120,
    )
    assert check.returncode == 0, check.stdout + check.stderr


# -- under `dk-mirror serve` ----------------------------------------------------------------


@contextlib.contextmanager
def _serve(db: Path) -> Iterator[str]:
    """`dk-mirror serve --offline` on the store; yields its base URL."""
    with serve(db, "--offline", env=_env(db.parent / "home")) as served:
        yield served.url


def _rest(base: str, query: str) -> httpx.Response:
    return httpx.get(
        base + "/v1/documents:searchDocumentChunks", params={"query": query}, timeout=60
    )


def _mcp(base: str, query: str) -> Any:
    from mcp import Client

    async def call() -> Any:
        async with Client(base + "/mcp") as client:
            return await client.call_tool("search_documents", {"query": query})

    return anyio.run(call)


def _web(base: str, query: str) -> httpx.Response:
    return httpx.get(base + "/search", params={"q": query}, timeout=60)


def _answers_keras(base: str) -> None:
    rest = _rest(base, "keras")
    assert rest.status_code == 200, rest.text
    assert _parents(rest.json())[0] == KERAS
    assert _parents(_rest(base, "zyzzyvaquokka").json()) == []
    mcp = _mcp(base, "keras")
    assert not mcp.is_error, mcp.content
    assert _parents(mcp.structured_content)[0] == KERAS
    web = _web(base, "keras")
    assert web.status_code == 200
    assert "/doc/" + KERAS.removeprefix("documents/") in web.text


@pytest.mark.parametrize("damage", ["garbled meta.json", "truncated segments"])
def test_a_running_server_rebuilds_a_damaged_index_and_answers(store: Path, damage: str) -> None:
    with _serve(store) as base:
        _answers_keras(base)  # the index is open and has been searched
        DAMAGE[damage](store)
        _answers_keras(base)
        _answers_keras(base)


@pytest.mark.parametrize("damage", ["older store file", "another store's index"])
def test_a_server_started_on_an_outdated_index_rebuilds_it(store: Path, damage: str) -> None:
    DAMAGE[damage](store)
    with _serve(store) as base:
        _answers_keras(base)


def _hold_index(db: Path) -> subprocess.Popen[str]:
    """Another process holding the index (as a long import would); released on stdin's end."""
    code = f"""
        import sys
        from pathlib import Path
        from mirror.store.textindex.sqlite.folder_lock import FolderLock
        lock = FolderLock(Path({str(_index(db) / "index.lock")!r}))
        assert lock.acquire(0)
        print("held", flush=True)
        sys.stdin.read()
    """
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_env(db.parent / "home"),
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def test_a_server_says_the_index_is_rebuilding_until_it_is(store: Path) -> None:
    with _serve(store) as base:
        _answers_keras(base)
        holder = _hold_index(store)  # the rebuild cannot start until it lets go
        try:
            _garble_meta(store)
            answers: dict[str, Any] = {}
            asks = {"rest": _rest, "mcp": _mcp, "web": _web}
            threads = [
                threading.Thread(target=lambda k=k: answers.update({k: asks[k](base, "keras")}))
                for k in asks
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
        finally:
            assert holder.stdin is not None
            holder.stdin.close()
            holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
        rest = answers["rest"]
        assert rest.status_code == 503 and int(rest.headers["Retry-After"]) > 0
        error = rest.json()["error"]
        assert error["code"] == 503 and error["status"] == "UNAVAILABLE"
        assert "being rebuilt" in error["message"]
        assert answers["mcp"].is_error
        assert answers["mcp"].content[0].text.startswith("UNAVAILABLE (503)")
        web = answers["web"]
        assert web.status_code == 503 and "being rebuilt" in web.text
        assert int(web.headers["Retry-After"]) > 0
        deadline = time.monotonic() + 60
        while _rest(base, "keras").status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        _answers_keras(base)
