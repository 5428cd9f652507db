"""Writers taking turns (mirror/store/db/turns.py, engine.py): on PostgreSQL a write rolled back
for a deadlock runs again and says what happened if it never gets through; on SQLite a writer
(and the shared quota bucket) waits behind a writer that holds the lock past the busy timeout.

Real parts: a real PostgreSQL deadlock (a second session holding a row the store's write needs
while asking for a lock the write holds), a real SQLite write lock held by another connection.
Retry waits are patched to zero; the only waiting is for the other session's lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from tenacity import wait_none

from mirror.errors import WriteConflict
from mirror.models import Document
from mirror.service.pacing import SharedPacer
from mirror.store.db import engine as engines
from mirror.store.db import turns
from mirror.store.store import Store
from mirror.upstream.pacing import Pacer, Rule
from tests.conftest import query_store
from tests.fakes import FakeTime


def _doc(name: str, text: str) -> Document:
    return Document(name=f"documents/example.dev/{name}", content=text, title=name)


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(turns, "WAIT", wait_none())


def _dsn(pg_url: str) -> str:
    return pg_url  # libpq takes the same postgresql:// URL


def _deadlock_one_put(pg_url: str, store: Store) -> tuple[BaseException | None, int]:
    """Provoke a real deadlock with `store.put` of pages a and b: another session holds row b
    and then asks for page a's lock, which the put took first. Returns (the put's failure or
    None, how many times the put began writing)."""
    store.put([_doc("a", "a0"), _doc("b", "b0")], fetched_at=1.0, upstream="t")
    other = psycopg.connect(_dsn(pg_url))
    other.execute("UPDATE documents SET title = 'held' WHERE name = 'documents/example.dev/b'")
    began = 0
    writing = threading.Event()
    real = turns.take_pages

    def counted(conn, names):  # type: ignore[no-untyped-def]
        nonlocal began
        began += 1
        real(conn, names)
        writing.set()

    failure: list[BaseException] = []

    def put() -> None:
        try:
            store.put([_doc("a", "a1"), _doc("b", "b1")], fetched_at=2.0, upstream="t")
        except BaseException as exc:
            failure.append(exc)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(turns, "take_pages", counted)
        writer = threading.Thread(target=put)
        writer.start()
        assert writing.wait(30)  # the put holds pages a and b...
        _until_waiting(pg_url)  # ...and waits for row b
        try:
            # Page a's lock, as the put's writer takes it: a cycle PostgreSQL must break.
            other.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                (turns._PAGES, "documents/example.dev/a"),
            )
            other.commit()
        except psycopg.errors.DeadlockDetected:
            other.rollback()  # this session was the one chosen: the put goes on
        writer.join(60)
    other.close()
    return (failure[0] if failure else None), began


def _until_waiting(pg_url: str) -> None:
    """Return once a session of the database waits for a lock (polled, up to 30 s)."""
    with psycopg.connect(_dsn(pg_url), autocommit=True) as watcher:
        for _ in range(3000):
            row = watcher.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()
            if row is not None and row[0] > 0:
                return
            threading.Event().wait(0.01)
    raise AssertionError("the put never waited for the held row")


def test_a_put_that_deadlocks_runs_again_and_writes_its_pages(
    pg_url: str, no_backoff: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mirror.store")
    store = Store.open(pg_url)
    try:
        failure, began = _deadlock_one_put(pg_url, store)
        assert failure is None
        got = store.get_many(["documents/example.dev/a", "documents/example.dev/b"])
        assert sorted(c.document.content or "" for c in got.values()) == ["a1", "b1"]
    finally:
        store.close()
    # Either the put was rolled back and ran again, or the other session was: both end well.
    assert began in (1, 2)
    if began == 2:
        assert "trying again" in caplog.text
    history = query_store(
        pg_url,
        "SELECT name, count(*) FROM document_versions GROUP BY name ORDER BY name",
    )
    assert [n for _name, n in history] == [2, 2]  # each page's two contents, once each


def test_a_write_that_keeps_colliding_says_so_and_what_to_do(
    pg_url: str, no_backoff: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(turns, "ATTEMPTS", 1)  # the first collision is the last
    store = Store.open(pg_url)
    try:
        for _ in range(3):  # PostgreSQL picks the victim: try until it picks the put
            failure, _began = _deadlock_one_put(pg_url, store)
            if failure is not None:
                break
    finally:
        store.close()
    assert isinstance(failure, WriteConflict), failure
    assert "deadlock detected (SQLSTATE 40P01)" in failure.message
    assert failure.hint is not None and "writing the same pages at the same moment" in failure.hint
    assert "check that the database server" not in str(failure)


# -- SQLite: a writer waits its turn ----------------------------------------------------------


@pytest.fixture
def short_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy timeout of 0.1 s, so a lock held 1 s outlasts it without a slow test."""
    monkeypatch.setattr(engines, "BUSY_TIMEOUT_MS", 100)


@pytest.fixture
def locked_store(tmp_path: Path, short_busy: None) -> Iterator[tuple[Store, threading.Event]]:
    """A store whose write lock another connection holds until the event is set."""
    path = tmp_path / "store.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Event()

    def hold() -> None:
        release.wait(30)
        holder.execute("COMMIT")
        holder.close()

    thread = threading.Thread(target=hold)
    thread.start()
    yield store, release
    release.set()
    thread.join()
    store.close()


def test_a_writer_waits_for_a_lock_held_past_the_busy_timeout(
    locked_store: tuple[Store, threading.Event], caplog: pytest.LogCaptureFixture
) -> None:
    store, release = locked_store
    timer = threading.Timer(1.0, release.set)  # ten busy timeouts, then the other commits
    timer.start()
    written = store.put([_doc("a", "a0")], fetched_at=1.0, upstream="t")
    timer.join()
    assert written == 1
    assert "waiting for it to finish" in caplog.text


def test_the_shared_quota_bucket_waits_rather_than_pacing_alone(
    locked_store: tuple[Store, threading.Event], caplog: pytest.LogCaptureFixture
) -> None:
    store, release = locked_store
    rule = Rule(10, 9.5, burst=3)
    clock = FakeTime(100.0)
    pacer = SharedPacer(
        store,
        "http://up.test",
        "get",
        rule,
        clock=clock.clock,
        sleep=clock.sleep,
        fallback=Pacer.for_rule(rule, clock=clock.clock, sleep=clock.sleep),
    )
    timer = threading.Timer(1.0, release.set)
    timer.start()
    pacer.acquire()
    timer.join()
    assert "cannot keep the get quota bucket" not in caplog.text
    state = store.buckets.get("http://up.test", "get")
    assert state is not None and state.tat > 0  # the call was counted in the shared row


def test_an_import_takes_the_store_alone_and_no_lock_per_page(pg_url: str) -> None:
    # A million-page import must not take a lock per page (PostgreSQL's lock table holds some
    # 64 per connection): it holds the store's bulk lock, and at most the change log's append
    # lock (one per transaction, taken just before its commit), nothing else of ours.
    held: list[tuple[str, int]] = []

    def docs() -> Iterator[Document]:
        for i in range(1000):
            if i == 900:  # a few batches of 200 are written by now
                with psycopg.connect(_dsn(pg_url), autocommit=True) as watcher:
                    held.extend(
                        watcher.execute(
                            "SELECT mode, classid::bigint FROM pg_locks "
                            "WHERE locktype = 'advisory' AND granted"
                        ).fetchall()
                    )
            yield _doc(f"page-{i:04d}", f"text {i}")

    store = Store.open(pg_url)
    try:
        assert store.put_stream(docs(), fetched_at=1.0, upstream="t").documents == 1000
    finally:
        store.close()
    assert ("ExclusiveLock", turns._BULK) in held
    assert set(held) <= {("ExclusiveLock", turns._BULK), ("ExclusiveLock", turns._LOG)}
    assert len(held) == len(set(held))
