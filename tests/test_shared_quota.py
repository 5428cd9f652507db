"""One quota bucket shared through the store by every process on it: the row (threads, two
stores on one file, a fake clock), the read-only fallback, and real `dk-mirror fetch`
processes against the emulator enforcing a quota (a 2 s window so the runs take seconds)."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.config import ENV_GET_RATE, ENV_QUOTA_WINDOW, Settings
from mirror.service import Mirror
from mirror.service.documents import FETCH_CONCURRENCY
from mirror.service.pacing import LEASE_MAX, LEASE_SPAN, SharedPacer, pacers
from mirror.store.store import Store
from mirror.upstream.pacing import Pacer, Rule, reserve
from mirror.upstream.retry import RetryPolicy
from tests.conftest import query_store
from tests.emulator import Emulator, Fault, Recorded
from tests.emulator_fixtures import corpus_documents, synthetic_documents
from tests.fakes import FakeTime
from tests.test_pacing import most_in_any_window

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

UP = "http://up.test"
RULE = Rule(10, 9.5, burst=3)  # interval 1.25 s after a burst of 3


@pytest.fixture
def two_stores(db_url: str) -> Iterator[tuple[Store, Store]]:
    """Two Stores (two engines, as two processes have) on one fresh SQLite file."""
    first, second = Store.open(db_url), Store.open(db_url)
    yield first, second
    first.close()
    second.close()


def shared(
    store: Store, clock: FakeTime, bucket: str = "get", upstream: str = UP, rule: Rule = RULE
) -> SharedPacer:
    """A pacer on `store`'s bucket at `rule` that waits on the fake clock."""
    return SharedPacer(
        store,
        upstream,
        bucket,
        rule,
        clock=clock.clock,
        sleep=clock.sleep,
        fallback=Pacer.for_rule(rule, clock=clock.clock, sleep=clock.sleep),
    )


# -- the row ------------------------------------------------------------------------------------


def test_many_threads_on_two_stores_take_every_slot_exactly_once(
    two_stores: tuple[Store, Store],
) -> None:
    # 8 threads, 4 per store (process), 96 reservations at one frozen instant: each must see
    # the one before it, so the slots are exactly the schedule one bucket in memory makes.
    now = 1000.0
    frozen = FakeTime(now)
    frozen.sleep = lambda _seconds: None  # type: ignore[method-assign]  # time stands still
    pacers_ = [shared(store, frozen) for store in two_stores]
    waits: list[float] = []
    lock = threading.Lock()

    def worker(pacer: SharedPacer) -> None:
        for _ in range(12):
            waited = pacer.acquire()
            with lock:
                waits.append(waited)

    threads = [threading.Thread(target=worker, args=(pacers_[i % 2],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    expected, state = [], None
    for _ in range(len(waits)):
        state, start = reserve(state, RULE, now)
        expected.append(start - now)
    assert sorted(waits) == pytest.approx(expected)
    assert two_stores[0].buckets.get(UP, "get") == two_stores[1].buckets.get(UP, "get")


def test_a_429_seen_by_one_process_slows_the_other(two_stores: tuple[Store, Store]) -> None:
    clock = FakeTime(500.0)
    one, other = shared(two_stores[0], clock), shared(two_stores[1], clock)
    assert one.acquire() == 0.0
    one.slow_down(5.0)
    # The other process has seen no 429, yet waits out Retry-After, then goes at half rate.
    assert other.acquire() == pytest.approx(5.0)
    assert other.acquire() == pytest.approx(2.5)
    state = two_stores[1].buckets.get(UP, "get")
    assert state is not None and state.factor == 0.5 and state.slowed_at == 500.0


def test_each_upstream_and_quota_has_its_own_bucket(two_stores: tuple[Store, Store]) -> None:
    clock = FakeTime(0.0)
    store = two_stores[0]
    for _ in range(RULE.burst):
        shared(store, clock).acquire()
    assert shared(store, clock).acquire() == pytest.approx(RULE.interval)  # the burst is spent
    assert shared(store, clock, bucket="search").acquire() == 0.0
    assert shared(store, clock, upstream="http://other.test").acquire() == 0.0
    assert store.buckets.get(UP, "answer") is None


def _counting_changes(store: Store) -> list[int]:
    """Count the bucket's write transactions on `store` (the real ones still run)."""
    calls: list[int] = []
    change = store.buckets.change

    def counted(*args: Any) -> Any:
        calls.append(1)
        return change(*args)

    store.buckets.change = counted  # type: ignore[method-assign]
    return calls


# Pacing lifted: slots 6 us apart.
HUGE = Rule.per_minute(10_000_000)


def test_at_a_huge_rate_one_transaction_leases_several_slots_counted_in_the_row(
    two_stores: tuple[Store, Store],
) -> None:
    # Pacing lifted (10M calls/min, slots 6 us apart): 64 calls cost 2 write transactions,
    # not 64, and the row holds exactly the 64 slots, as one bucket in memory would.
    rule, frozen = HUGE, FakeTime(1000.0)
    store = two_stores[0]
    transactions = _counting_changes(store)
    pacer = shared(store, frozen, rule=rule)
    waits = [pacer.acquire() for _ in range(2 * LEASE_MAX)]
    assert len(transactions) == 2 and max(waits) <= LEASE_SPAN
    state = None
    for _ in range(2 * LEASE_MAX):
        state, _start = reserve(state, rule, 1000.0)
    assert store.buckets.get(UP, "get") == state
    # Another process on the store sees them: its first slot comes after all 64.
    assert state is not None
    other = shared(two_stores[1], frozen, rule=rule)
    now = frozen.now  # moved on by the waits of the slots after the burst
    assert other.acquire() == pytest.approx(reserve(state, rule, now)[1] - now)


def test_a_leased_slot_is_never_used_late_and_a_real_quota_leases_one(
    two_stores: tuple[Store, Store],
) -> None:
    frozen = FakeTime(0.0)
    store = two_stores[0]
    transactions = _counting_changes(store)
    huge = shared(store, frozen, rule=HUGE)
    huge.acquire()
    frozen.now += 1.0  # the rest of its lease is stale now: a new transaction
    huge.acquire()
    assert len(transactions) == 2
    paced = shared(store, frozen, bucket="search")  # RULE: slots 1.25 s apart
    for _ in range(4):
        paced.acquire()
    assert len(transactions) == 6  # one each


def test_at_a_huge_rate_a_crawls_calls_50_ms_apart_share_one_lease(
    two_stores: tuple[Store, Store],
) -> None:
    # A crawl at 50 ms latency calls once per worker every 50 ms: its lease must outlive that
    # gap, or every call pays a bucket transaction queued behind the crawl's own commits.
    rule, frozen = HUGE, FakeTime(1000.0)
    store = two_stores[0]
    transactions = _counting_changes(store)
    pacer = shared(store, frozen, rule=rule)
    for _ in range(4):
        pacer.acquire()
        frozen.now += 0.05
    assert len(transactions) == 1


# -- read-only stores: this process only, said in a log line ----------------------------------


@pytest.mark.sqlite_only("a read-only store is an SQLite file on a read-only mount")
def test_a_read_only_store_paces_in_process_and_says_so(
    db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    Store.open(db_url).close()  # created and migrated
    store = Store.open(db_url, readonly=True)
    caplog.set_level(logging.INFO, logger="mirror")
    try:
        chosen = pacers(store, Settings(db_url=db_url), RetryPolicy(sleep=lambda _s: None))
        assert all(isinstance(p, Pacer) for p in chosen.values())
        assert "read-only" in caplog.text and "within this process only" in caplog.text
        # A shared pacer whose store refuses the write at run time falls back the same way.
        clock = FakeTime(0.0)
        pacer = shared(store, clock)
        assert [pacer.acquire() for _ in range(4)] == pytest.approx([0, 0, 0, RULE.interval])
        pacer.slow_down(10.0)
        assert pacer.acquire() == pytest.approx(10.0)  # Retry-After is still honoured
        assert caplog.text.count("cannot keep the get quota bucket in the store") == 1
    finally:
        store.close()


@pytest.mark.sqlite_only("a read-only store is an SQLite file on a read-only mount")
def test_an_online_read_only_mirror_checks_a_snapshot_without_writing(
    db_url: str, emulator: Emulator, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(db_url=db_url, upstream=emulator.base_url, api_key="test-key")
    names = [d["name"] for d in corpus_documents("tensorflow.org")[:30]]
    with Mirror(settings, retry=RetryPolicy(sleep=lambda _s: None)) as writer:
        assert writer.upstream_stats().calls == 0
        writer.fetch(names)
        assert writer.upstream_stats().calls == 2  # 30 names: two batches
        writer.export_snapshot(tmp_path / "pin.dkmirror", names=names)
    before = _bucket_rows(db_url)
    assert [row[1] for row in before] == ["get"]  # (upstream, bucket, tat, factor, slowed_at)
    caplog.set_level(logging.INFO, logger="mirror")
    with Mirror(settings, readonly=True, retry=RetryPolicy(sleep=lambda _s: None)) as reader:
        report = reader.check_snapshot(tmp_path / "pin.dkmirror")
        assert report.pinned == 30 and report.changed == [] and report.removed == []
        assert reader.upstream_stats().calls == 2
    assert "paced within this process only" in caplog.text
    assert _bucket_rows(db_url) == before  # nothing written


def _bucket_rows(db_url: str) -> list[tuple[object, ...]]:
    path = db_url.removeprefix("sqlite:///")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return conn.execute("SELECT * FROM quota_buckets ORDER BY bucket").fetchall()


# -- two real `dk-mirror fetch` processes on one store -----------------------------------------

WINDOW = 2.0  # seconds: the emulator's quota window, and DK_MIRROR_QUOTA_WINDOW to match


def _batch_gets(emu: Emulator) -> list[Recorded]:
    return sorted((r for r in emu.requests if r.path.endswith(":batchGet")), key=lambda r: r.at)


def run_two_fetches(
    emu: Emulator,
    db_url: str,
    logs_dir: Path,
    names: tuple[list[str], list[str]],
    per_minute: int,
    command: tuple[str, ...] = ("fetch",),
    keys: tuple[str, str] = ("test-key", "test-key"),
) -> list[dict[str, Any]]:
    """Both fetches (or crawls) at once, on one store; each reads its names from stdin, given to both
    at the same moment once they have started, so they really run side by side. Their reports."""
    Store.open(db_url).close()  # created and migrated before either starts
    env = {
        **os.environ,
        "DK_MIRROR_DB": db_url,
        "DK_MIRROR_UPSTREAM": emu.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": "test-key",
        ENV_GET_RATE: str(per_minute),
        ENV_QUOTA_WINDOW: str(WINDOW),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    logs = [(logs_dir / f"out{i}.txt", logs_dir / f"err{i}.txt") for i in range(2)]
    procs = []
    for (out, err), key in zip(logs, keys, strict=True):
        with out.open("w") as stdout, err.open("w") as stderr:
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "mirror", *command, "--json", "--names-file", "-"],
                    # Distinct keys let a test tell the processes' calls apart at the emulator.
                    env={**env, "DEVELOPER_KNOWLEDGE_API_KEY": key},
                    stdin=subprocess.PIPE,
                    stdout=stdout,
                    stderr=stderr,
                    text=True,
                )
            )
    # Both start up (imports; seconds on a loaded machine), then block reading their names:
    # one still importing when the other has sent half its batches would not run beside it.
    time.sleep(2.5)
    for proc, part in zip(procs, names, strict=True):
        assert proc.stdin is not None
        proc.stdin.write("\n".join(part) + "\n")
    for proc in procs:  # end of input for both at once: both start fetching together
        assert proc.stdin is not None
        proc.stdin.close()
    reports = []
    for proc, (out, err) in zip(procs, logs, strict=True):
        assert proc.wait(timeout=300) == 0, err.read_text()
        reports.append(json.loads(out.read_text()))
        assert reports[-1]["failed"] == [], out.read_text()
    return reports


def _stored(db_url: str) -> int:
    return int(query_store(db_url, "SELECT count(*) FROM documents")[0][0])


@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.parametrize("command", ["fetch", "crawl"])
def test_two_processes_on_one_store_stay_under_the_quota_together(
    tmp_path: Path, db_url: str, command: str
) -> None:
    docs = synthetic_documents(400)
    names = [d["name"] for d in docs]
    with Emulator(docs) as emu:
        emu.quota_window = WINDOW
        emu.quota_per_minute = {"get": 10}  # 10 calls per 2 s window, counted by the emulator
        # The mirror is told the same quota: 300/min over 2 s windows is 10 per window.
        halves = (names[:200], names[200:])
        run_two_fetches(emu, db_url, tmp_path, halves, 300, (command,))
        calls = _batch_gets(emu)
    assert _stored(db_url) == 400
    assert [r.status for r in calls] == [200] * 20  # no 429: every call went through once
    assert most_in_any_window([r.at for r in calls], WINDOW) <= 10
    # The quota really bound them: 20 calls needed two windows and more, not one burst.
    assert calls[-1].at - calls[0].at >= WINDOW
    # And the two really ran side by side (else sharing would prove nothing).
    by_process = [[r.at for r in calls if r.query["names"][0] in set(part)]
                  for part in (names[:200], names[200:])]  # fmt: skip
    assert by_process[0][0] < by_process[1][-1] and by_process[1][0] < by_process[0][-1]


@pytest.mark.serial
@pytest.mark.slow
def test_a_429_slows_both_processes_and_retry_after_is_honoured(
    tmp_path: Path, db_url: str
) -> None:
    docs = synthetic_documents(1000)
    names = [d["name"] for d in docs]
    # 15 batches and 35, the 429 in the first process's 14th: with the two sharing 10 calls
    # a second, about 2.5 s after the first call, so the other process (whose interpreter may
    # start a second late) is running by then, and has calls left for over a second after it.
    # (With the 429 in the 6th batch, 0.6 s in, the other had sometimes not begun: 1 in 4.)
    mine, theirs = names[:300], names[300:]
    hit = mine[260]  # in the 14th batch of the first process, while the other is running
    with Emulator(docs) as emu:
        emu.inject(Fault("status", status=429, retry_after="1"), times=1, name=hit)
        # 600/min over 2 s windows: 20 per window, 0.125 s apart; no quota enforced upstream.
        run_two_fetches(emu, db_url, tmp_path, (mine, theirs), 600)
        calls = _batch_gets(emu)
    assert _stored(db_url) == 1000
    (refused,) = [r for r in calls if r.status == 429]
    retried = [r for r in calls if hit in r.query["names"] and r.status == 200]
    assert len(retried) == 1 and retried[0].at >= refused.at + 0.95  # Retry-After: 1
    # The other process saw no 429, yet held back too: apart from calls it had already
    # reserved (at most one per batch it has in flight), none came within the second after it.
    theirs_set = set(theirs)
    other = [r.at for r in calls if r.query["names"][0] in theirs_set]
    assert other[0] < refused.at and other[-1] > refused.at + 1.0  # it was running throughout
    during = [t for t in other if refused.at < t < refused.at + 0.9]
    assert len(during) <= FETCH_CONCURRENCY, during
