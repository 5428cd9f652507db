"""Two `dk-mirror crawl` processes on one PostgreSQL frontier: each page fetched exactly once.

The crawlers claim their batches' frontier rows with FOR UPDATE SKIP LOCKED
(mirror/store/tables/crawls.py), so a page one crawler is fetching is skipped by the other, and the
shared quota bucket keeps both under the emulator's enforced quota together (no 429).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import query_store
from tests.emulator import Emulator
from tests.test_shared_quota import WINDOW, run_two_fetches

pytestmark = [pytest.mark.slow]

HOST = "docs.example.dev"
PAGES = 400
FANOUT = 4  # page i links to pages FANOUT*i+1 .. FANOUT*i+FANOUT: six levels for 400 pages


def _name(i: int) -> str:
    return f"documents/{HOST}/team/page-{i:04d}"


def linked_pages() -> list[dict[str, Any]]:
    """A tree of pages (each also links back to the root and to its parent: names the frontier
    already holds, which neither crawler may fetch again)."""
    docs = []
    for i in range(PAGES):
        children = [c for c in range(FANOUT * i + 1, FANOUT * i + FANOUT + 1) if c < PAGES]
        links = [f"[child {c}](/team/page-{c:04d})" for c in children]
        links += ["[home](/team/page-0000)", f"[up](/team/page-{max(0, (i - 1) // FANOUT):04d})"]
        docs.append(
            {
                "name": _name(i),
                "title": f"Team page {i}",
                "content": f"# Team page {i}\n\n" + "\n\n".join(links) + "\n",
            }
        )
    return docs


def test_two_crawlers_on_one_scope_fetch_every_page_once_under_the_quota(
    pg_url: str, tmp_path: Path
) -> None:
    with Emulator(
        linked_pages(), api_key=None
    ) as emu:  # any key: one per process, to tell them apart
        emu.quota_window = WINDOW
        emu.quota_per_minute = {"get": 10}  # 10 calls per 2 s window, enforced by the emulator
        command = ("crawl", "--prefix", f"{HOST}/team/", "--depth", "10", "--concurrency", "3")
        seed = [_name(0)]
        reports = run_two_fetches(
            emu, pg_url, tmp_path, (seed, seed), 300, command, keys=("crawler-a", "crawler-b")
        )
        calls = [r for r in emu.requests if r.path.endswith(":batchGet")]
    assert calls and all(r.status == 200 for r in calls), Counter(r.status for r in calls)
    delivered = Counter(name for r in calls for name in r.query["names"])
    everything = {_name(i) for i in range(PAGES)}
    assert set(delivered) == everything  # none lost
    assert [n for n, times in delivered.items() if times != 1] == []  # none fetched twice
    stored = query_store(pg_url, "SELECT count(*) FROM documents WHERE content IS NOT NULL")
    assert stored == [(PAGES,)]
    states = query_store(pg_url, "SELECT state, count(*) FROM crawl_frontier GROUP BY state")
    assert states == [("fetched", PAGES)]
    # Both really crawled (else sharing the frontier would prove nothing).
    by_key = Counter(r.headers.get("x-goog-api-key") for r in calls)
    assert by_key["crawler-a"] > 0 and by_key["crawler-b"] > 0, by_key
    assert all(report["failed"] == [] for report in reports)
    # Each reports the crawl's totals as the crawl's, and its own share as its own.
    assert [r["fetched"] for r in reports] == [PAGES, PAGES]
    mine = [r["thisRun"]["fetched"] for r in reports]
    assert sum(mine) == PAGES and min(mine) > 0, mine
    assert mine == [delivered_by(calls, "crawler-a"), delivered_by(calls, "crawler-b")]


def delivered_by(calls: list[Any], key: str) -> int:
    """Pages delivered to the crawler that sent `key`."""
    return sum(len(r.query["names"]) for r in calls if r.headers.get("x-goog-api-key") == key)
