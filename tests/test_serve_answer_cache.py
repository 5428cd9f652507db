"""The answer cache of a read-only server: hits for an unchanged store, never a stale answer.

A write by anyone (another connection, another process) changes the store's generation, and
the next request answers from the store again.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from mirror.models import Document, View
from mirror.serve.answer_cache import AnswerCache
from mirror.service import Mirror
from mirror.store.db.generation import GenerationProbe, probe_for
from mirror.store.store import Store

if TYPE_CHECKING:
    from starlette.testclient import TestClient

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _doc(name: str, content: str) -> Document:
    return Document(name=f"documents/example.dev/{name}", content=content, title=name)


class Counter:
    """A generation the test moves by hand."""

    def __init__(self) -> None:
        self.value: int | None = 1

    def __call__(self) -> int | None:
        return self.value


# -- the cache on its own ---------------------------------------------------------------------


def test_a_kept_answer_is_served_only_for_its_generation() -> None:
    generation = Counter()
    cache = AnswerCache(generation)
    a, b = _doc("a", "alpha"), _doc("b", "beta")
    gen = cache.generation()
    assert cache.documents(["a", "b"], gen) is None  # nothing kept yet
    cache.keep(["a", "b"], [a, b], gen, View.CONTENT, [b"A", b"B"])
    assert cache.documents(["b", "a", "b"], gen) == [b, a, b]
    assert cache.encoded(["a", "b"], View.CONTENT, gen) == [b"A", b"B"]
    assert cache.encoded(["a"], View.BASIC, gen) is None  # that view was never encoded
    assert cache.documents(["a", "c"], gen) is None  # all or nothing

    generation.value = 2  # someone wrote
    gen = cache.generation()
    assert cache.documents(["a"], gen) is None


def test_an_answer_read_before_a_write_is_not_kept_after_it() -> None:
    generation = Counter()
    cache = AnswerCache(generation)
    before = cache.generation()  # a request reads the generation, then the store...
    generation.value = 2
    now = cache.generation()  # ...meanwhile a write lands and another request sees it
    cache.keep(["a"], [_doc("a", "old")], before)  # the first request's answer: dropped
    assert cache.documents(["a"], now) is None


def test_no_generation_means_no_caching() -> None:
    generation = Counter()
    generation.value = None  # e.g. PostgreSQL, or the probe could not read right now
    cache = AnswerCache(generation)
    gen = cache.generation()
    cache.keep(["a"], [_doc("a", "x")], gen)
    assert cache.documents(["a"], gen) is None


def test_memory_stays_under_the_bound_least_recently_used_go_first() -> None:
    cache = AnswerCache(Counter(), max_bytes=250)
    gen = cache.generation()
    for name in ("a", "b", "c"):
        cache.keep([name], [_doc(name, "x" * 100)], gen)
    assert cache.documents(["a"], gen) is None  # evicted: the oldest
    assert cache.documents(["c"], gen) is not None
    cache.keep(["d"], [_doc("d", "x" * 100)], gen)  # c was used last, so b goes
    assert cache.documents(["b"], gen) is None and cache.documents(["c"], gen) is not None


def test_more_than_a_batch_or_none_is_never_a_hit() -> None:
    cache = AnswerCache(Counter())
    gen = cache.generation()
    names = [f"n{i}" for i in range(21)]
    cache.keep(names, [_doc(n, "x") for n in names], gen)
    assert cache.documents(names, gen) is None  # the store path refuses 21 names
    assert cache.documents([], gen) is None


# -- the store's generation -------------------------------------------------------------------


@pytest.mark.slow
def test_the_generation_changes_with_every_commit_from_any_connection_or_process(
    tmp_path: Path,
) -> None:
    path = tmp_path / "store.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        first = store.generation()
        assert first is not None and store.generation() == first  # reading changes nothing
        writer = Store.open(f"sqlite:///{path}")  # another connection in this process
        writer.put([_doc("a", "one")], fetched_at=1.0, upstream="test")
        writer.close()
        second = store.generation()
        assert second != first
        script = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            # A column the search triggers do not watch: they need dk-mirror's dk_inflate.
            "c.execute(\"UPDATE documents SET upstream = 'changed elsewhere'\"); c.commit()"
        )
        subprocess.run([sys.executable, "-c", script, str(path)], check=True)
        assert store.generation() != second
    finally:
        store.close()


def test_memory_databases_have_no_generation() -> None:
    store = Store.open("sqlite://")
    try:
        assert store.generation() is None
        assert probe_for(store.engine) is None
    finally:
        store.close()


def test_a_locked_store_answers_no_generation_at_once(tmp_path: Path) -> None:
    path = tmp_path / "locked.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # a rollback-journal database: readers are locked out
    probe = GenerationProbe(f"file:{path}?mode=ro")
    try:
        assert probe() is None  # no wait on the event loop: "cannot tell", so no cache hit
    finally:
        holder.execute("ROLLBACK")
        probe.close()
        holder.close()


# -- through the served app (in-process) --------------------------------------------------------


def test_a_read_only_server_never_serves_a_document_older_than_the_store(
    store_mirror: Callable[..., Mirror], serve_client: Callable[..., TestClient]
) -> None:
    server_mirror = store_mirror("cached", offline=True)
    server_mirror.import_sample()
    names = [s.name for s in server_mirror.list_documents(limit=3)]
    http = serve_client(server_mirror)
    params = [("names", n) for n in names]
    tool_call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "get_documents", "arguments": {"names": names}},
    }
    first = http.get("/v1/documents:batchGet", params=params)
    again = http.get("/v1/documents:batchGet", params=params)  # from the cache
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    single = http.get(f"/v1/{names[0]}")
    assert single.json() == first.json()["documents"][0]

    # Another writer (its own connection) changes one of them.
    writer = Store.open(server_mirror.settings.db_url)
    changed = Document(name=names[1], content="changed content, written while the server runs")
    writer.put([changed], fetched_at=9.0, upstream="test")
    writer.close()

    after = http.get("/v1/documents:batchGet", params=params).json()["documents"]
    assert after[1]["content"] == "changed content, written while the server runs"
    assert after[0] == first.json()["documents"][0]
    mcp = http.post("/mcp", json=tool_call, headers=MCP_HEADERS)
    docs = mcp.json()["result"]["structuredContent"]["documents"]
    assert docs[1]["content"] == "changed content, written while the server runs"
    assert json.loads(mcp.json()["result"]["content"][0]["text"]) == {"documents": docs}


@pytest.mark.parametrize("view", ["DOCUMENT_VIEW_BASIC", "DOCUMENT_VIEW_FULL", "2"])
def test_cached_answers_are_the_same_bytes_in_every_view(
    sample_mirror: Mirror, serve_client: Callable[..., TestClient], view: str
) -> None:
    http = serve_client(sample_mirror)
    names = [s.name for s in sample_mirror.list_documents(limit=2)]
    params = [("names", n) for n in names] + [("view", view)]
    first = http.get("/v1/documents:batchGet", params=params)
    content_view = http.get("/v1/documents:batchGet", params=[("names", n) for n in names])
    again = http.get("/v1/documents:batchGet", params=params)
    assert first.status_code == 200 and again.content == first.content
    assert content_view.content != first.content  # a view is part of the key
