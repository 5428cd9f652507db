"""`changes` at scale: the newest 100 of 1,000,000 change log events, through Mirror (filter,
store, ChangeEvent) vs raw sqlite3 on the same table, in the same run.

Usage: python -m bench.bench_changes [--events N] [--rounds N]
The log is filled straight through sqlite3 (made-up events over 50,000 names; the write path
is the import's, timed by bench_import), then each query is timed both ways:
- newest 100: issue 31's target, under 100 ms at 1,000,000 events;
- newest 100 under a prefix (one section of one site), of one page, of one class (signal),
  and of the last 7 days.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from bench.common import median, ms, pct, timed
from mirror.config import Settings
from mirror.service import Mirror

NAMES = 50_000
SECTIONS = ("docs/extensions", "docs/devtools", "blog", "docs/web-platform", "articles")
INSERT = (
    "INSERT INTO change_events (name, observed_at, kind, old_sha256, new_sha256, "
    "old_update_time, new_update_time, classes, summary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
RAW = (
    "SELECT id, name, observed_at, kind, old_sha256, new_sha256, old_update_time, "
    "new_update_time, classes, summary FROM change_events {where} ORDER BY id DESC LIMIT 100"
)


def fill(db: Path, count: int) -> None:
    """`count` made-up events, in time order, as a log of years of refreshes would hold."""
    rng = random.Random(31)
    pages = min(NAMES, max(10, count // 20))  # most events are changes of pages already added
    names = [f"documents/developer.chrome.com/{SECTIONS[i % 5]}/page-{i:06d}" for i in range(pages)]
    conn = sqlite3.connect(db)
    start = time.time() - count * 30  # one every 30 s, up to now

    def events():  # type: ignore[no-untyped-def]
        for i in range(count):
            kind = "added" if i < pages else rng.choice(("changed",) * 18 + ("removed", "added"))
            sha = f"{rng.getrandbits(256):064x}"
            old = None if kind == "added" else f"{rng.getrandbits(256):064x}"
            bits = rng.choice((1, 2, 2, 6, 10, 18)) if kind == "changed" else None
            yield (names[i] if i < pages else rng.choice(names), start + i * 30, kind,
                   old, None if kind == "removed" else sha, None, "2026-01-01T00:00:00Z", bits,
                   "text changed" if bits else None)  # fmt: skip

    with conn:
        conn.executemany(INSERT, events())
    conn.close()


def main() -> None:
    """Build a store, fill its log, then time each query both ways."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True))
        mirror.stats()  # creates the store at this version's schema
        fill(db, args.events)
        raw = sqlite3.connect(db)
        prefix = "documents/developer.chrome.com/docs/devtools/"
        page = "documents/developer.chrome.com/blog/page-000002"
        queries = (
            ("newest 100", {}, "", ()),
            ("under a prefix", {"prefix": prefix}, "WHERE name >= ? AND name < ?",
             (prefix, prefix + "\U0010ffff")),
            ("signal only", {"kind": "signal"}, "WHERE classes & 16 != 0", ()),
            ("one page", {"prefix": page}, "WHERE name >= ? AND name < ?",
             (page, page + "\U0010ffff")),
            ("since 7 days", {"since": "7d"}, "WHERE observed_at >= ?",
             (time.time() - 7 * 86400,)),
        )  # fmt: skip
        results = []
        for label, options, where, params in queries:
            sql = RAW.format(where=where)
            for _ in range(5):  # warm the page cache and statement caches both ways
                raw.execute(sql, params).fetchall()
                mirror.list_changes(**options)
            assert mirror.list_changes(**options)
            base = timed(lambda s=sql, p=params: raw.execute(s, p).fetchall(), args.rounds)
            ours = timed(lambda o=options: mirror.list_changes(**o), args.rounds)
            results.append((label, base, ours))
        raw.close()
        mirror.close()
    for label, base, ours in results:
        ratio = median(ours) / median(base)
        print(
            f"{label:15} Mirror.list_changes median {ms(median(ours))} p99 {ms(pct(ours, 99))}"
            f"  raw sqlite3 {ms(median(base))}  ratio {ratio:.2f}x"
        )
    newest = median(results[0][2]) * 1000
    print(
        f"{args.events} events, {args.rounds} rounds; newest 100 in {newest:.2f} ms "
        f"(target < 100 ms, issue 31: {'met' if newest < 100 else 'NOT met'})"
    )


if __name__ == "__main__":
    main()
