"""Two `dk-mirror fetch` processes under one upstream quota: calls/min achieved vs the quota.

Usage: python -m bench.bench_quota [--per-minute 600] [--window 10] [--batches 60]
Target (issue 11): two processes sharing a store never draw a 429 from a server enforcing the
quota, and together use most of it (calls/min close to the quota; the pacer keeps 0.5 s of
slack per window and a burst of limit/20, so ~0.95x for 100/min over a minute).

The emulator enforces `--per-minute` counted over `--window` seconds (the window is shortened
from a minute so a run takes seconds; DK_MIRROR_QUOTA_WINDOW tells the mirror the same). Each
process fetches `--batches` batches of 20 disjoint synthetic documents. The baseline, in the
same run, is the same two processes on two separate stores: each paces alone, so together they
ask for twice the quota and meet 429s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT
from mirror.config import ENV_GET_RATE, ENV_QUOTA_WINDOW
from mirror.store.store import Store
from tests.emulator import Emulator, Recorded
from tests.synthetic import synthetic_documents


def most_in_any_window(times: list[float], window: float) -> int:
    """The most calls any half-open window of `window` seconds holds."""
    ordered, most, first = sorted(times), 0, 0
    for last, t in enumerate(ordered):
        while ordered[first] <= t - window:
            first += 1
        most = max(most, last - first + 1)
    return most


def run(
    emu: Emulator, parts: list[list[str]], stores: list[Path], args: argparse.Namespace
) -> float:
    """Fetch each part in its own process (on the given stores) at once; the wall seconds."""
    for db in set(stores):
        Store.open(f"sqlite:///{db}").close()  # created and migrated before the clock starts
    env = {
        **os.environ,
        "DK_MIRROR_UPSTREAM": emu.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": "test-key",
        ENV_GET_RATE: str(args.per_minute),
        ENV_QUOTA_WINDOW: str(args.window),
        "PYTHONPATH": str(ROOT),
        # Words only: the quota's pacing is timed here; embedding what each fetch wrote would
        # add model time after the last call (bench_import_embed times that).
        "DK_MIRROR_SEMANTIC": "off",
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "mirror", "fetch", "--names-file", "-"],
            env={**env, "DK_MIRROR_DB": str(db)},
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for db in stores
    ]
    time.sleep(1.5)  # let both start up; they then wait for their names
    start = time.perf_counter()
    for proc, names in zip(procs, parts, strict=True):
        assert proc.stdin is not None
        proc.stdin.write("\n".join(names) + "\n")
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
    codes = [proc.wait() for proc in procs]
    seconds = time.perf_counter() - start
    if any(codes):
        raise SystemExit(f"a fetch failed: exit codes {codes}")
    return seconds


def report(label: str, calls: list[Recorded], seconds: float, args: argparse.Namespace) -> None:
    """One line: calls, 429s, calls/min achieved as a ratio to the quota, the fullest window."""
    ok = sorted(r.at for r in calls if r.status == 200)
    refused = sum(1 for r in calls if r.status == 429)
    span = ok[-1] - ok[0] if len(ok) > 1 else 0.0
    per_minute = (len(ok) - 1) / span * 60 if span else 0.0
    limit = int(args.per_minute * args.window / 60)
    print(
        f"{label:<22} {len(calls):4d} calls, {refused:3d} x 429, {seconds:6.1f} s; "
        f"{per_minute:6.0f} calls/min = {per_minute / args.per_minute:.2f}x the quota; "
        f"fullest {args.window:g} s window {most_in_any_window(ok, args.window)}/{limit}"
    )


def main() -> None:
    """Shared store vs two stores, same processes, same emulator quota."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-minute", type=int, default=600, help="the quota, calls/min")
    parser.add_argument("--window", type=float, default=10.0, help="seconds it is counted over")
    parser.add_argument("--batches", type=int, default=60, help="batches of 20 per process")
    args = parser.parse_args()
    count = 2 * 20 * args.batches
    docs = synthetic_documents(count)
    names = [d["name"] for d in docs]
    parts = [names[: count // 2], names[count // 2 :]]
    print(
        f"2 processes x {args.batches} batches; quota {args.per_minute}/min counted over "
        f"{args.window:g} s windows ({int(args.per_minute * args.window / 60)} per window)"
    )
    with Emulator(docs) as emu, tempfile.TemporaryDirectory() as tmp:
        emu.quota_window = args.window
        emu.quota_per_minute = {"get": int(args.per_minute * args.window / 60)}
        shared = Path(tmp) / "shared.sqlite3"
        seconds = run(emu, parts, [shared, shared], args)
        calls = [r for r in emu.requests if r.path.endswith(":batchGet")]
        report("one shared store", calls, seconds, args)
        time.sleep(args.window)  # let the emulator's window empty before the baseline
        emu.reset()
        seconds = run(emu, parts, [Path(tmp) / "a.sqlite3", Path(tmp) / "b.sqlite3"], args)
        baseline = [r for r in emu.requests if r.path.endswith(":batchGet")]
        report("two stores (baseline)", baseline, seconds, args)
    print(
        "target (issue 11): the shared store draws 0 x 429 and uses most of the quota "
        "(~0.95x at 100/min over a minute); the baseline's 429s show what pacing alone would do"
    )


if __name__ == "__main__":
    main()
