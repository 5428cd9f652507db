"""A large search index spreads its pages over shards searched at once (index_shards.py): the
same pages found, once each, best first, through writes, rewrites, deletes and rebuilds, on
real SQLite files and tantivy folders (a killed import and concurrent searches on a split
index: tests/test_text_index.py). SPLIT_FROM is lowered so that a few dozen pages make a
large index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import text

from mirror.models import Document
from mirror.store.store import Store
from mirror.store.textindex.sqlite import shards as index_shards
from mirror.store.textindex.sqlite.index import VERSION
from tests import test_text_index as text_index_tests

pytestmark = pytest.mark.sqlite_only

SPLIT = 20


def _docs(start: int, count: int, word: str = "otter") -> list[Document]:
    return text_index_tests._docs(start, count, word, varied=True)


def _held(store: Store) -> list[int]:
    """Pages in each shard, as committed."""
    with store.engine.connect() as conn, conn.begin():
        return store.text_index().held(conn.connection.driver_connection)


def _names(store: Store, query: str) -> list[str]:
    return [hit.name for hit in store.search_local(query, limit=500)]


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(index_shards, "SPLIT_FROM", SPLIT)
    return SPLIT


def test_a_small_index_is_one_shard(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.put(_docs(0, 60), fetched_at=0.0, upstream="test")
        assert _held(store) == [60, 0]
    finally:
        store.close()


def test_pages_past_the_split_are_spread_and_every_search_sees_all_shards(
    tmp_path: Path, split: int
) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.put(_docs(0, 15), fetched_at=0.0, upstream="test")
        assert _held(store) == [15, 0]
        store.put(_docs(15, 185), fetched_at=1.0, upstream="test")
        first, second = _held(store)
        assert first + second == 200
        # Shard 0 filled to the split, then the rest went by hash: about half each.
        assert 60 <= second <= 120, (first, second)

        hits = store.search_local("otter", limit=500)
        assert sorted(h.name for h in hits) == [d.name for d in _docs(0, 200)]
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)  # merged best first
        # A word in one page finds it, whichever shard holds it.
        for i in (3, 57, 101, 199):
            assert _names(store, f"w{i:05}") == [f"documents/example.dev/p{i:05}"]
        # The first page of results is the best of all shards: the same pages as the best
        # five of the whole list, in the same order.
        assert [h.name for h in store.search_local("otter", limit=5)] == [h.name for h in hits[:5]]
    finally:
        store.close()


def test_rewrites_deletes_and_rebuilds_of_a_split_index(tmp_path: Path, split: int) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.put(_docs(0, 100), fetched_at=0.0, upstream="test")
        # Pages written before the split (in shard 0) and after it (in either) written again:
        # each found once, with its new text only.
        again = _docs(0, 10, word="badger") + _docs(90, 10, word="badger")
        store.put(again, fetched_at=1.0, upstream="test")
        rewritten = [d.name for d in _docs(0, 10) + _docs(90, 10)]
        assert sorted(_names(store, "badger")) == rewritten
        assert len(_names(store, "otter")) == 80
        with store.engine.begin() as conn:
            for i in (5, 95, 50):
                name = f"documents/example.dev/p{i:05}"
                conn.execute(text("DELETE FROM documents WHERE name = :n"), {"n": name})
        assert len(_names(store, "badger")) == 18 and len(_names(store, "otter")) == 79
        state = store.check_index()
        assert (state.documents, state.indexed, state.orphans) == (97, 97, 0)
        assert not state.stale

        # Rebuilt, the pages fall in other shards (at this size their statistics differ, and
        # so may the order of close scores): the same pages are found.
        before = {q: sorted(_names(store, q)) for q in ("otter", "badger", "w00042")}
        assert store.rebuild_index() == 97
        assert sum(_held(store)) == 97
        assert {q: sorted(_names(store, q)) for q in before} == before
    finally:
        store.close()


def test_an_index_of_the_one_folder_layout_is_rebuilt_in_shards(tmp_path: Path) -> None:
    """An index an earlier version made (one tantivy index in the folder itself, state version
    1) is rebuilt on the first search; its files go."""
    db = tmp_path / "store.sqlite3"
    store = Store.open(f"sqlite:///{db}")
    try:
        store.put(_docs(0, 30), fetched_at=0.0, upstream="test")
        assert len(_names(store, "otter")) == 30
    finally:
        store.close()
    folder = Path(f"{db}-search")
    state = json.loads((folder / "state.json").read_text())
    assert state["version"] == VERSION  # the sharded layout's, and whatever came after
    for shard in folder.glob("shard-*"):
        for path in shard.iterdir():
            path.rename(folder / path.name)  # tantivy's files where version 1 kept them
        shard.rmdir()
    (folder / "state.json").write_text(json.dumps({**state, "version": 1}))

    store = Store.open(f"sqlite:///{db}")
    try:
        assert len(_names(store, "otter")) == 30
        assert sorted(p.name for p in folder.iterdir() if p.is_file()) == [
            "index.lock",
            "state.json",
        ]
        assert json.loads((folder / "state.json").read_text())["version"] == VERSION
        assert _held(store) == [30, 0]
    finally:
        store.close()


def test_every_entry_is_walked_once_across_shards_and_pages(
    tmp_path: Path, split: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`index check` reads every entry: in pages of _WALK per shard, handed out in batches."""
    monkeypatch.setattr(index_shards, "_WALK", 7)
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.put(_docs(0, 50), fetched_at=0.0, upstream="test")
        assert all(_held(store))
        with store.engine.connect() as conn, conn.begin():
            batches = list(store.text_index().entry_names(conn.connection.driver_connection, 3))
        assert max(map(len, batches)) == 3
        names = [name for batch in batches for name in batch]
        assert sorted(names) == [d.name for d in _docs(0, 50)]
        state = store.check_index()
        assert (state.indexed, state.orphans, state.stale) == (50, 0, False)
    finally:
        store.close()
