"""SQLite's search index, a tantivy folder beside the store: one indexer at a time across
processes, repaired after a process dies mid-sync, and consistent under concurrent searches and
writes (real SQLite files, real processes, real threads)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import tantivy

from mirror.models import Document
from mirror.store.store import Store
from mirror.store.textindex.sqlite import shards as index_shards
from mirror.store.textindex.sqlite.folder_lock import FolderLock

pytestmark = pytest.mark.sqlite_only


def _docs(start: int, count: int, word: str = "otter", *, varied: bool = False) -> list[Document]:
    """Pages p{start}.. holding `word` and a word of their own (w00042); `varied`: the word
    0-6 times more, so that pages score differently."""
    return [
        Document(
            name=f"documents/example.dev/p{i:05}",
            uri=f"https://example.dev/p{i:05}",
            title=f"Page {i}",
            content=f"# Page {i}\n\nA {word} page, number w{i:05}.\n"
            + (f"{word} " * (i % 7) if varied else ""),
        )
        for i in range(start, start + count)
    ]


def _indexed_store(db: Path) -> str:
    """A store of 50 "otter" pages at `db`, indexed; its URL."""
    url = f"sqlite:///{db}"
    store = Store.open(url)
    store.put(_docs(0, 50), fetched_at=0.0, upstream="test")
    assert len(store.search_local("otter", limit=100)) == 50
    store.close()
    return url


def _spy(monkeypatch: pytest.MonkeyPatch, owner: type, method: str) -> list[tuple[object, ...]]:
    """Record the arguments of every call of `owner.method` (which still runs)."""
    calls: list[tuple[object, ...]] = []
    real = getattr(owner, method)

    def spying(*args: object, **kwargs: object) -> object:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, method, spying)
    return calls


def _child(code: str, *, output: bool = False) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE if output else subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )


@pytest.mark.slow
def test_one_process_holds_the_index_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "index.lock"
    child = _child(
        f"""
        import sys, time
        from pathlib import Path
        from mirror.store.textindex.sqlite.folder_lock import FolderLock
        lock = FolderLock(Path({str(path)!r}))
        assert lock.acquire()
        print("held", flush=True)
        time.sleep(60)
        """,
        output=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        mine = FolderLock(path)
        assert not mine.acquire(timeout=0.2)
        child.send_signal(signal.SIGKILL)  # a process that dies releases it
        child.wait()
        assert mine.acquire(timeout=5)
        assert mine.acquire(timeout=0)  # re-entrant in the holder
        mine.release()
        mine.release()
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


@pytest.mark.slow
def test_a_process_killed_while_indexing_leaves_an_index_the_next_search_repairs(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.sqlite3"
    url = _indexed_store(db)
    # A writer that dies in the middle of indexing its own commit (after tantivy indexed part
    # of it, before anything was committed or recorded).
    child = _child(
        f"""
        import os
        from mirror.models import Document
        from mirror.store.textindex.sqlite import index as text_index
        from mirror.store.store import Store

        def dying(self, raw, wait=None, rebuild=True):
            writer = self._writer()
            text_index.apply_changes(writer, raw, self.state() or 0, text_index.store_seq(raw))
            os._exit(9)  # as kill -9: no commit, no state, no cleanup
        text_index.TextIndex._sync = dying
        store = Store.open({url!r})
        docs = [
            Document(name=f"documents/example.dev/q{{i:05}}", title="Badger",
                     content=f"# Badger {{i}}\\n\\nA badger page.\\n")
            for i in range(30)
        ]
        store.put(docs, fetched_at=1.0, upstream="child")
        store.search_local("badger")
        """
    )
    assert child.wait(timeout=120) == 9
    store = Store.open(url)
    try:
        assert len(store.search_local("badger", limit=100)) == 30
        assert len(store.search_local("otter", limit=100)) == 50
        state = store.check_index()
        assert not state.stale and state.indexed == 80 and state.orphans == 0
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("split_from", [100_000, 30], ids=["one-shard", "split"])
def test_an_import_killed_after_publishing_part_of_its_pages_is_repaired_not_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_from: int
) -> None:
    """kill -9 in the middle of an import whose index had committed some of its pages: the
    store never committed them, and the next search puts back just those pages (the names the
    import wrote down before each part commit), not the whole index. Split: the 50 pages were
    indexed in shard 0, the import rewrites them into the shards of their names (index_shards)
    and the repair takes its entries out of both."""
    from mirror.store.textindex.sqlite import index as text_index

    monkeypatch.setattr(index_shards, "SPLIT_FROM", split_from)
    db = tmp_path / "store.sqlite3"
    url = _indexed_store(db)
    child = _child(
        f"""
        import os
        from mirror.models import Document
        from mirror.store.textindex.sqlite import parts as index_parts
        from mirror.store.textindex.sqlite import shards as index_shards
        from mirror.store.store import Store

        index_shards.SPLIT_FROM = {split_from}
        index_parts.COMMIT_EVERY = 4
        import mirror.store.store as store_module
        store_module.PUT_BATCH = 2
        real = index_parts.Parts.commit
        done = []
        def commit(self):
            real(self)
            done.append(1)
            if len(done) == 3:
                os._exit(9)  # as kill -9, after three part commits, before the store's
        index_parts.Parts.commit = commit
        store = Store.open({url!r})
        docs = [
            Document(name=f"documents/example.dev/p{{i:05}}", title="Badger",
                     content=f"# Badger {{i}}\\n\\nA badger page.\\n")
            for i in range(0, 40)
        ]
        store.put_stream(iter(docs), fetched_at=1.0, upstream="child")
        """
    )
    assert child.wait(timeout=120) == 9
    folder = Path(f"{db}-search")
    assert (folder / text_index.PENDING).is_file()
    if split_from < 50:  # the killed import published pages into the second shard
        assert tantivy.Index.open(str(folder / "shard-1")).searcher().num_docs > 0
    rebuilds = _spy(monkeypatch, text_index.TextIndex, "_rebuild")
    store = Store.open(url)
    try:
        assert store.search_local("badger", limit=100) == []
        assert len(store.search_local("otter", limit=100)) == 50
        state = store.check_index()
        assert not state.stale and state.indexed == 50 and state.orphans == 0
        assert rebuilds == [] and not (folder / text_index.PENDING).exists()
    finally:
        store.close()


@pytest.mark.parametrize("split_from", [None, 150], ids=["one-shard", "split"])
def test_concurrent_searches_while_pages_are_written_and_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, split_from: int | None
) -> None:
    """32 searching threads and a writer: no error, every page found is in the store, and each
    search sees at least the pages committed before it began. Split: the writes spread the
    index over its shards (index_shards.py), which every search then searches at once."""
    if split_from is not None:
        monkeypatch.setattr(index_shards, "SPLIT_FROM", split_from)
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    store.size_for(32)
    store.put(_docs(0, 200), fetched_at=0.0, upstream="test")
    committed = threading.Event()
    errors: list[BaseException] = []
    stop = threading.Event()
    seen_counts: list[tuple[int, int]] = []

    def writer() -> None:
        try:
            for round_ in range(10):
                store.put(_docs(200 + 20 * round_, 20), fetched_at=1.0 + round_, upstream="w")
                committed.set()
                time.sleep(0.05)
        except BaseException as exc:
            errors.append(exc)
        finally:
            stop.set()

    def searcher() -> None:
        try:
            while not stop.is_set():
                before = store.stats().with_content
                hits = store.search_local("otter", limit=400)
                names = {h.name for h in hits}
                held = store.get_many(sorted(names))
                assert set(held) == names  # never a page the store does not hold
                seen_counts.append((before, len(names)))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(32)]
    threads.append(threading.Thread(target=writer))
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not errors, errors[:3]
        assert committed.is_set() and seen_counts
        # Pages are only added here: a search finds every page committed before it began.
        assert all(found >= before for before, found in seen_counts)
        assert len(store.search_local("otter", limit=400)) == 400
    finally:
        store.close()


def test_the_change_log_is_pruned_once_the_index_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import text

    from mirror.store.textindex.sqlite import indexer

    monkeypatch.setattr(indexer, "PRUNE_AT", 5)
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = Store.open(url)
    store.put(_docs(0, 20), fetched_at=0.0, upstream="test")
    store.close()  # indexes the last commit's changes, then prunes them
    store = Store.open(url)
    try:
        with store.engine.connect() as conn:
            # Only the index's last change stays (what a copied-back store is compared with).
            assert conn.execute(text("SELECT count(*) FROM search_changes")).scalar_one() == 1
        store.put(_docs(20, 3, "badger"), fetched_at=1.0, upstream="test")
        # Caught up from the log's tail, not rebuilt: the pruned ids were all applied.
        rebuilt = []
        monkeypatch.setattr(type(store.text_index()), "_rebuild", lambda *a: rebuilt.append(a) or 0)
        assert len(store.search_local("badger", limit=10)) == 3
        assert not rebuilt
        assert len(store.search_local("otter", limit=100)) == 20
    finally:
        store.close()


def test_a_bulk_write_that_fails_after_the_index_committed_part_of_it_leaves_no_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import commits the index every COMMIT_EVERY pages (bounded memory) before the store
    commits: when the import then fails, the store rolls back, and the next sync repairs the
    pages the import had published (from the names it wrote down), without a rebuild."""
    from mirror.store.textindex.sqlite import index as text_index
    from mirror.store.textindex.sqlite import parts as index_parts

    monkeypatch.setattr(index_parts, "COMMIT_EVERY", 3)
    monkeypatch.setattr("mirror.store.store.PUT_BATCH", 2)  # batches written before the error
    parts = _spy(monkeypatch, index_parts.Parts, "commit")
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = Store.open(url)
    try:
        store.put(_docs(0, 5), fetched_at=0.0, upstream="test")
        assert len(store.search_local("otter", limit=10)) == 5  # indexed before the import
        rebuilds = _spy(monkeypatch, text_index.TextIndex, "_rebuild")

        def failing() -> object:
            yield from _docs(0, 5, "badger")  # the pages already stored, changed
            yield from _docs(100, 12, "badger")  # and new ones
            raise ValueError("line 18: not a document")

        with pytest.raises(ValueError, match="line 18"):
            store.put_stream(failing(), fetched_at=1.0, upstream="import")  # type: ignore[arg-type]
        assert parts  # the index had committed part of the import
        assert store.search_local("badger") == []
        assert rebuilds == []  # repaired: only the pages the import had published
        assert len(store.search_local("otter", limit=10)) == 5
        state = store.check_index()
        assert not state.stale and state.indexed == 5
        # And one that succeeds is searchable as a whole.
        store.put_stream(_docs(200, 12, "weasel"), fetched_at=2.0, upstream="import")
        assert len(store.search_local("weasel", limit=20)) == 12
    finally:
        store.close()


def test_a_store_copied_back_from_an_older_file_gets_its_index_rebuilt(tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "store.sqlite3"
    url = f"sqlite:///{db}"
    store = Store.open(url)
    store.put(_docs(0, 10), fetched_at=0.0, upstream="test")
    store.close()
    shutil.copy(db, tmp_path / "backup.sqlite3")
    store = Store.open(url)
    store.put(_docs(100, 5, "badger"), fetched_at=1.0, upstream="test")
    assert len(store.search_local("badger", limit=10)) == 5
    store.close()
    shutil.copy(tmp_path / "backup.sqlite3", db)  # the index folder stays as it was
    store = Store.open(url)
    try:
        # The index is ahead of this store: its extra pages are never returned.
        assert store.search_local("badger") == []
        assert len(store.search_local("otter", limit=20)) == 10
        # New writes reuse the change ids the older file never had: once the log passes the
        # index's last id, the page logged there differs, and the index is rebuilt.
        store.put(_docs(200, 7, "weasel"), fetched_at=2.0, upstream="test")
        assert len(store.search_local("weasel", limit=20)) == 7
        assert store.search_local("badger") == []
        state = store.check_index()
        assert not state.stale and state.indexed == 17
    finally:
        store.close()


def test_large_syncs_and_rebuilds_commit_the_index_in_parts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tantivy holds what it indexed since its last commit in memory: a sync of many changes
    (a store copied in, or written by another tool) and a rebuild commit every COMMIT_EVERY
    pages, and the index ends whole all the same."""
    from mirror.store.textindex.sqlite import index as text_index
    from mirror.store.textindex.sqlite import parts as index_parts

    monkeypatch.setattr(index_parts, "COMMIT_EVERY", 4)
    monkeypatch.setattr(text_index, "_BATCH", 4)  # pages read back per statement
    commits = _spy(monkeypatch, index_parts.Parts, "commit")
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.put(_docs(0, 2), fetched_at=0.0, upstream="test")
        assert len(store.search_local("otter", limit=50)) == 2
        # 30 changes the index has not seen: the next search (or the background indexer)
        # applies them in parts.
        commits.clear()
        store.put(_docs(100, 30), fetched_at=1.0, upstream="test")
        assert len(store.search_local("otter", limit=50)) == 32
        assert len(commits) >= 30 // 4
        commits.clear()
        assert store.rebuild_index() == 32
        assert len(commits) >= 32 // 4
        state = store.check_index()
        assert not state.stale and state.indexed == 32
    finally:
        store.close()


def test_a_search_that_joins_a_rebuild_still_finds_pages_committed_since_it_began(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a server (size_for) a search that finds the index must be rebuilt joins the rebuild
    already running; that rebuild read the store before a later commit, so the search must
    apply what was committed since before it answers (it found 200 of 220 pages)."""
    from mirror.store.textindex.sqlite import index as text_index

    began, go = threading.Event(), threading.Event()
    real = text_index.all_documents

    def held_after_reading(raw):  # type: ignore[no-untyped-def]
        began.set()  # the rebuild has its snapshot of the store: 200 pages
        go.wait(10)
        yield from real(raw)

    monkeypatch.setattr(text_index, "all_documents", held_after_reading)
    store = Store.open(f"sqlite:///{tmp_path / 'store.sqlite3'}")
    try:
        store.size_for(4)
        store.put(_docs(0, 200), fetched_at=0.0, upstream="test")
        first = threading.Thread(target=lambda: store.search_local("otter", limit=400))
        first.start()
        assert began.wait(10)
        store.put(_docs(200, 20), fetched_at=1.0, upstream="w")
        threading.Timer(0.3, go.set).start()
        assert len(store.search_local("otter", limit=400)) == 220
        first.join(timeout=60)
    finally:
        go.set()
        store.close()
