"""Refresh of the ~2,000-document corpus from the emulator vs a full refetch, in one run.

Usage: python -m bench.bench_refresh [--latency 0.05] [--concurrency 4] [--changed 10]
Target (issue 11): refreshing 2,000 unchanged documents uses 100 BASIC calls and zero content
calls, and stores nothing new; printed next to `fetch --refresh` of the same documents (100
content calls moving every page) as the baseline.

The store is filled once with the whole corpus, then, each measured against the same store:
refresh with nothing changed (at --concurrency and at 1), a full refetch, and a refresh after
--changed documents changed upstream. Every request carries --latency seconds of injected
latency, since a local emulator answers in microseconds and would measure only our own work;
client-side pacing is lifted (the emulator has no quota), so the times show the work, and
the call counts what the quota would be charged (100 calls = 1 minute of the default 100/min).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import add_corpus_option, english_corpus
from mirror.config import Settings
from mirror.policy import Mode
from mirror.service import Mirror
from tests.emulator import Emulator, Fault

BASIC = "DOCUMENT_VIEW_BASIC"


def load(path: Path) -> list[dict[str, Any]]:
    """Every Document record in a gzipped JSON-lines corpus file."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def calls(emu: Emulator) -> tuple[int, int]:
    """(BASIC-view calls, content calls) the emulator saw since its last reset."""
    basic = sum(1 for r in emu.requests if r.query.get("view") == [BASIC])
    return basic, len(emu.requests) - basic


def footprint(path: Path) -> tuple[int, int, int]:
    """(version rows, stored content rows, content bytes) of the store file."""
    with sqlite3.connect(path) as conn:
        versions = conn.execute("SELECT count(*) FROM document_versions").fetchone()[0]
        kept = conn.execute("SELECT count(*) FROM version_contents").fetchone()[0]
        size = conn.execute(
            "SELECT (SELECT coalesce(sum(length(content)), 0) FROM documents) + "
            "(SELECT coalesce(sum(length(content)), 0) FROM version_contents)"
        ).fetchone()[0]
    conn.close()
    return versions, kept, size


def measure(emu: Emulator, latency: float, run: Any) -> tuple[float, int, int, Any]:
    """Seconds, BASIC calls and content calls of one `run()` with `latency` added to every
    request, and what it returned."""
    emu.reset()
    emu.inject(Fault("latency", seconds=latency), times=-1)
    start = time.perf_counter()
    result = run()
    seconds = time.perf_counter() - start
    basic, content = calls(emu)
    return seconds, basic, content, result


def main() -> None:
    """Fill a store, then time refreshes and a full refetch against it."""
    parser = argparse.ArgumentParser()
    add_corpus_option(parser)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds added per request")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--changed", type=int, default=10, help="documents changed upstream")
    args = parser.parse_args()
    docs = load(english_corpus(args.corpus))
    names = [d["name"] for d in docs]
    with Emulator(docs) as emu, tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite3"
        settings = Settings(
            db_url=f"sqlite:///{path}",
            upstream=emu.base_url,
            api_key="test-key",
            get_per_minute=1_000_000,
            # Words only: this bench times the write path; the embedding every write now adds by
            # default is timed by bench_import_embed, beside its own baseline.
            semantic=False,
        )
        with Mirror(settings) as mirror:
            filled = mirror.fetch(names)
            if filled.fetched != len(docs):
                raise SystemExit(f"filling the store failed: {filled.error}")
            before = footprint(path)
            rows: list[tuple[str, float, int, int, str]] = []

            def refresh(concurrency: int) -> Any:
                return lambda: mirror.refresh(concurrency=concurrency)

            for concurrency in (args.concurrency, 1):
                seconds, basic, content, report = measure(emu, args.latency, refresh(concurrency))
                if report.unchanged != len(docs) or report.failed:
                    raise SystemExit(f"refresh found changes or failed: {report.to_json()}")
                rows.append((f"refresh, unchanged (concurrency {concurrency})", seconds, basic,
                             content, "0 B"))  # fmt: skip
            after = footprint(path)
            seconds, basic, content, report = measure(
                emu, args.latency, lambda: mirror.fetch(names, Mode(refresh=True))
            )
            moved = sum(len(d["content"].encode()) for d in docs)
            rows.append(("fetch --refresh (full refetch)", seconds, basic, content,
                         f"{moved / 1e6:.1f} MB"))  # fmt: skip
            for doc in docs[: args.changed]:
                emu.put({**doc, "content": doc["content"] + "\nChanged.\n"})
            seconds, basic, content, report = measure(emu, args.latency, refresh(args.concurrency))
            if len(report.changed) != args.changed:
                raise SystemExit(f"refresh missed changes: {report.to_json()}")
            changed_bytes = sum(len(d["content"].encode()) + 9 for d in docs[: args.changed])
            rows.append((f"refresh, {args.changed} changed (concurrency {args.concurrency})",
                         seconds, basic, content, f"{changed_bytes / 1e3:.0f} kB"))  # fmt: skip
    print(f"{len(docs)} stored documents; {args.latency * 1000:.0f} ms latency per request; "
          "pacing lifted")  # fmt: skip
    print(f"{'run':46} {'wall':>8} {'BASIC':>6} {'content':>8}  content moved")
    for label, seconds, basic, content, moved_text in rows:
        print(f"{label:46} {seconds:7.2f}s {basic:6d} {content:8d}  {moved_text}")
    full = rows[2][1]
    print(f"unchanged refresh vs full refetch: {rows[0][1] / full:.2f}x the time, "
          f"{rows[0][2] + rows[0][3]} vs {rows[2][2] + rows[2][3]} calls (target: 100 BASIC, 0 content)")  # fmt: skip
    print(f"store after the unchanged refreshes: {'unchanged' if after == before else 'CHANGED'} "
          f"(versions, kept contents, content bytes = {after})")  # fmt: skip


if __name__ == "__main__":
    main()
