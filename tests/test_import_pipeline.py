"""`import` reads and prepares batches in a thread of its own while the writer writes: a failure
on either side, at any batch, leaves the store exactly as it was, and no thread behind."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.config import Settings
from mirror.errors import InvalidInput
from mirror.service import Mirror
from mirror.store.textindex.sqlite import engine as index
from mirror.store.textindex.sqlite.adapter import SqliteText
from mirror.store.write.ahead import Ahead
from mirror.store.write.prepared import PUT_BATCH
from tests.test_import_limits import record


def _dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table (the FTS shadow tables too), in a stable order."""
    with sqlite3.connect(db) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
            # Virtual tables read through their shadow tables, which are dumped themselves.
            if not conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE 'CREATE VIRTUAL%'",
                (name,),
            ).fetchone()
        ]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"'), key=repr) for t in tables}


@pytest.fixture
def filled(tmp_path: Path) -> tuple[Path, Path]:
    """A store holding one import's pages, and a file that updates some and adds more."""
    db = tmp_path / "store.sqlite3"
    first = tmp_path / "first.jsonl"
    first.write_text("".join(record(i) for i in range(PUT_BATCH + 7)))
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.import_file(first)
    second = tmp_path / "second.jsonl"
    second.write_text(
        "".join(record(i, f"# Page {i}\n\nRewritten walrus {i}.\n") for i in range(3 * PUT_BATCH))
    )
    return db, second


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate()}


def _import(db: Path, path: Path) -> None:
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.import_file(path, overwrite=True)


def test_a_bad_line_after_several_batches_leaves_the_store_as_it_was(
    filled: tuple[Path, Path],
) -> None:
    db, path = filled
    before = _dump(db)
    with path.open("a") as out:
        out.write('{"name": "documents/example.com/page/x", "content": 5}\n')
    with pytest.raises(InvalidInput, match=f"line {3 * PUT_BATCH + 1}"):
        _import(db, path)
    assert _dump(db) == before
    assert "import-prepare" not in _threads()


def _failing(real: Callable[..., Any], call: int, thread: str | None = None) -> Callable[..., Any]:
    """`real`, but its `call`-th call raises RuntimeError; every call must come from `thread`."""
    calls: list[None] = []

    def wrapper(*args: Any, **kw: Any) -> Any:
        if thread is not None and threading.current_thread().name != thread:
            raise AssertionError(f"{real.__name__} ran outside the {thread} thread")
        calls.append(None)
        if len(calls) == call:
            raise RuntimeError(f"{real.__name__} failed")
        return real(*args, **kw)

    return wrapper


def test_a_failure_in_the_preparing_thread_leaves_the_store_as_it_was(
    filled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, path = filled
    before = _dump(db)
    real = index.entries_ahead
    # By the third batch the writer has written one and is writing (or has written) another.
    monkeypatch.setattr(index, "entries_ahead", _failing(real, 3, "import-prepare"))
    with pytest.raises(RuntimeError, match="entries_ahead failed"):
        _import(db, path)
    assert _dump(db) == before
    assert "import-prepare" not in _threads()
    monkeypatch.setattr(index, "entries_ahead", real)
    _import(db, path)  # the same file imports whole once nothing fails
    assert _dump(db) != before


def test_a_failure_in_the_writer_stops_the_preparing_thread(
    filled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, path = filled
    before = _dump(db)
    monkeypatch.setattr(SqliteText, "reindex", _failing(SqliteText.reindex, 2))
    with pytest.raises(RuntimeError, match="reindex failed"):
        _import(db, path)
    assert _dump(db) == before
    assert "import-prepare" not in _threads()


def test_ahead_keeps_order_and_reads_at_most_depth_plus_one_items_ahead() -> None:
    produced: list[int] = []

    def source() -> Iterator[int]:
        for i in range(100):
            produced.append(i)
            yield i

    with Ahead(source(), 2, name="t-ahead") as items:
        got = iter(items)
        assert next(got) == 0
        time.sleep(0.3)  # room for the producer to run as far ahead as it may
        # 0 was taken; 1 and 2 wait in the queue; 3 is read and waits for room.
        assert len(produced) <= 4
        assert [next(got) for _ in range(5)] == [1, 2, 3, 4, 5]
    assert "t-ahead" not in _threads()  # leaving early stopped the producer
    assert len(produced) < 100


def test_ahead_raises_the_producers_exception_in_the_reader() -> None:
    def source() -> Iterator[int]:
        yield 1
        raise ValueError("bad item")

    got: list[int] = []
    with Ahead(source(), 1) as items, pytest.raises(ValueError, match="bad item"):
        for item in items:
            got.append(item)
    assert got == [1]


def test_an_in_memory_store_streams_in_the_writers_thread() -> None:
    # Each thread would see its own empty in-memory database: nothing may run in another.
    from mirror.models import Document
    from mirror.store.store import Store

    store = Store.open("sqlite://")
    try:
        docs = (
            Document(
                name=f"documents/a.example/p{i}", title=f"Page {i}", content=f"getUserMedia {i}"
            )
            for i in range(2 * PUT_BATCH + 1)
        )
        report = store.put_stream(docs, fetched_at=1.0, upstream="test")
        assert report.documents == 2 * PUT_BATCH + 1
        assert len(store.search_local("user media", limit=3)) == 3
    finally:
        store.close()
