"""The store's connections under many threads: none is held by a thread that went idle."""

from __future__ import annotations

import threading
import time
from contextlib import closing

import pytest

from tests.conftest import open_store

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends


def _read_in_threads(store, names: list[str], count: int) -> list[BaseException]:  # type: ignore[no-untyped-def]
    """`count` fresh threads each read once at the same moment, then exit; their failures."""
    failures: list[BaseException] = []
    barrier = threading.Barrier(count)

    def read() -> None:
        barrier.wait()
        try:
            assert len(store.get_many(names)) == len(names)
        except BaseException as exc:  # reported to the test, not lost in the thread
            failures.append(exc)

    threads = [threading.Thread(target=read) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return failures


@pytest.mark.serial
def test_waves_of_new_threads_never_wait_for_a_connection(sample_mirror):
    with closing(open_store(sample_mirror)) as store:
        _waves_never_wait(store)


def _waves_never_wait(store) -> None:  # type: ignore[no-untyped-def]
    names = [s.name for s in store.list_documents(limit=20)]
    # Three waves of 40 new threads, as a server's pool grows, idles and replaces workers:
    # far more distinct threads than the pool has connections.
    for _ in range(3):
        started = time.monotonic()
        assert _read_in_threads(store, names, 40) == []
        assert time.monotonic() - started < 20
    # Idle connections are kept for reuse, but only up to the cap, and a read answers at once.
    assert store.engine.pool.checkedout() <= 8
    started = time.monotonic()
    assert len(store.get_many(names)) == 20
    assert time.monotonic() - started < 1


def test_size_for_keeps_a_connection_per_worker(sample_mirror):
    with closing(open_store(sample_mirror)) as store:
        _keeps_a_connection_per_worker(store)


def _keeps_a_connection_per_worker(store) -> None:  # type: ignore[no-untyped-def]
    names = [s.name for s in store.list_documents(limit=5)]
    store.size_for(48)
    assert _read_in_threads(store, names, 48) == []
    # Every worker's connection stays open for the next request (none opened and closed).
    assert store.engine.pool.checkedout() <= 48
    assert store.engine.pool.size() == 48 + 2
    # The recordings use the new engine, not the disposed one.
    assert store.recordings.engine is store.engine
