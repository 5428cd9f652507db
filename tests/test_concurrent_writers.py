"""Four writers at once on one store: `crawl`, `fetch`, `import` and `snapshot import`, on
overlapping pages, as real processes, on SQLite and on PostgreSQL. Every one must succeed, and
the store must be consistent afterwards: every document's hash its content's, its newest
version its current content, and the search index in agreement (`dk-mirror index check`).

Each of the four writes pages the others write too, with content of its own: the emulator
serves one text, the import file another, the snapshot a third. The import is large enough to
hold SQLite's write lock for longer than a connection's busy timeout, as a team's imports do.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.change_log_replay import replay_change_log
from tests.conftest import query_store
from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import synthetic_documents

pytestmark = [pytest.mark.both_backends, pytest.mark.slow]  # writers are processes

HOST = "docs.example.dev"
PAGES = 600  # the shared site: every writer writes some of it
# More pages only the import writes, so that on SQLite it holds the write lock for longer than
# a writer's 5 s busy timeout (PostgreSQL's writers collide on the shared pages alone).
PADDING = {"sqlite": 6000, "postgresql": 1000}
# Each round is a fresh store; DRILL_ROUNDS runs the drill more times by hand.
ROUNDS = int(os.environ.get("DRILL_ROUNDS", "2"))
ROOT = Path(__file__).resolve().parents[1]


def _site() -> list[dict[str, Any]]:
    """The pages upstream has: a tree from page 0, so a crawl from it reaches every page."""
    docs = synthetic_documents(PAGES, host=HOST)
    for i, doc in enumerate(docs):
        links = [j for j in (2 * i + 1, 2 * i + 2, (i * 7 + 3) % PAGES) if j < PAGES]
        doc["content"] += "\n" + "\n".join(f"- [p{j}](/guide/page-{j:05d})" for j in links) + "\n"
    return docs


def _variant(docs: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    return [{**doc, "content": f"{doc['content']}\n{tag}\n"} for doc in docs]


def _write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc) + "\n")
    return path


def _env(db_url: str, emu: Emulator) -> dict[str, str]:
    return {
        **os.environ,
        "DK_MIRROR_DB": db_url,
        "DK_MIRROR_UPSTREAM": emu.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": "test-key",
        "DK_MIRROR_GET_PER_MINUTE": "1000000",  # pacing lifted: the writers, not the quota
        "PYTHONPATH": str(ROOT),
    }


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mirror", *args], env=env, capture_output=True, text=True
    )


def _snapshot(tmp_path: Path, docs: list[dict[str, Any]]) -> Path:
    """A snapshot of `docs`, made by dk-mirror from a store of its own."""
    source = _write_jsonl(tmp_path / "for-snapshot.jsonl.gz", docs)
    env = {**os.environ, "DK_MIRROR_DB": str(tmp_path / "snap.sqlite3"), "PYTHONPATH": str(ROOT)}
    assert _run(env, "import", str(source)).returncode == 0
    out = tmp_path / "pages.dkmirror"
    made = _run(env, "snapshot", "export", str(out))
    assert made.returncode == 0, made.stderr
    return out


@pytest.fixture(scope="module")
def upstream() -> Any:
    with Emulator(_site(), api_key="test-key") as running:
        yield running


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_four_writers_at_once_all_succeed_and_leave_the_store_consistent(
    db_url: str, upstream: Emulator, tmp_path: Path, round_: int
) -> None:
    upstream.reset()
    upstream.inject(Fault("latency", seconds=0.01), times=-1)
    site = _site()
    names = [d["name"] for d in site]
    shuffled = random.Random(round_).sample(range(PAGES), PAGES)
    backend = db_url.split(":", 1)[0]
    padding = synthetic_documents(PADDING[backend], host="padding.example.dev")
    # The import: pages 0-449 in a random order (a file is in any order), among the padding.
    imported = _variant([site[i] for i in shuffled if i < 450], "imported") + padding
    random.Random(round_ + 100).shuffle(imported)
    import_file = _write_jsonl(tmp_path / "import.jsonl.gz", imported)
    snap = _snapshot(tmp_path, _variant(site[150:], "pinned"))
    fetch_list = tmp_path / "fetch.txt"
    fetch_list.write_text("\n".join(names[i] for i in shuffled if 100 <= i < 500) + "\n")
    env = _env(db_url, upstream)
    migrated = _run(env, "db", "upgrade")  # one store, created before the writers start
    assert migrated.returncode == 0, migrated.stderr
    commands = {
        "crawl": ["crawl", names[0], "--prefix", f"{HOST}/guide/", "--depth", "20"],
        "fetch": ["fetch", "--names-file", str(fetch_list)],
        "import": ["import", str(import_file), "--overwrite"],
        "snapshot import": ["snapshot", "import", str(snap)],
    }
    procs = {
        what: subprocess.Popen(
            [sys.executable, "-m", "mirror", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for what, args in commands.items()
    }
    failed = {}
    for what, proc in procs.items():
        _out, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failed[what] = err.strip().splitlines()[-3:]
    assert failed == {}

    # Every page is there, each document's hash is its content's, and its newest version
    # holds that content: no writer's history interleaved with another's.
    stored = dict(query_store(db_url, "SELECT name, content_sha256 FROM documents"))
    assert set(names) | {d["name"] for d in padding} == set(stored)
    for name, content in _contents(db_url):
        assert stored[name] == hashlib.sha256(content.encode()).hexdigest(), name
    newest = query_store(
        db_url,
        "SELECT v.name, v.sha256 FROM document_versions v WHERE v.version = "
        "(SELECT max(w.version) FROM document_versions w WHERE w.name = v.name)",
    )
    assert dict(newest) == stored
    # And the change log replays to exactly what is stored: one event per change, in order.
    assert replay_change_log(db_url)["added"] == len(stored)
    checked = _run(env, "index", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def _contents(db_url: str) -> list[tuple[str, str]]:
    """(name, Markdown) of every stored document, read back through the store."""
    from mirror.store.store import Store

    store = Store.open(db_url)
    try:
        return [(doc.name, doc.content or "") for doc in store.iter_documents()]
    finally:
        store.close()
