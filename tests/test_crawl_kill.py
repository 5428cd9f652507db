"""`dk-mirror crawl` killed with SIGKILL at random moments, and Ctrl-C: rerunning the same
command continues, nothing committed is fetched again, and the store stays sound."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import synthetic_documents

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HOST = "docs.example.dev"
COUNT = 2000
CONCURRENCY = 4
KILLS = 10


def _linked(count: int) -> list[dict[str, Any]]:
    """Synthetic pages linking as a site does: a tree from page 0 (every page reachable),
    links across it, back to the start (cycles), off-site, and inside code (not followed)."""
    docs = synthetic_documents(count, host=HOST)
    for i, doc in enumerate(docs):
        links = [2 * i + 1, 2 * i + 2, (i * 7 + 3) % count, 0]
        lines = [f"- [page {j}](/guide/page-{j:05d}#top)" for j in links if j < count]
        lines.append("- [elsewhere](https://web.dev/learn)")
        lines.append(f"```\n[not a link](/guide/page-{(i + 1) % count:05d}-in-code)\n```")
        doc["content"] += "\n" + "\n".join(lines) + "\n"
    return docs


DOCS = _linked(COUNT)
SEED = DOCS[0]["name"]


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    """The test upstream with the linked pages, each answer a little slow (kills land mid-run)."""
    with Emulator(DOCS) as running:
        running.inject(Fault("latency", seconds=0.02), times=-1)
        yield running


@pytest.fixture
def env(tmp_path: Path, upstream: Emulator) -> dict[str, str]:
    """What a user would set to crawl `upstream` into a fresh store (pacing lifted)."""
    return {
        **os.environ,
        "DK_MIRROR_DB": str(tmp_path / "store.sqlite3"),
        "DK_MIRROR_UPSTREAM": upstream.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": upstream.api_key or "",
        "DK_MIRROR_GET_PER_MINUTE": "1000000",
    }


def _interruptible() -> None:
    # A background test run inherits SIGINT ignored; give the child a terminal's default.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


COMMAND = ["crawl", SEED, "--prefix", f"{HOST}/guide/", "--concurrency", str(CONCURRENCY)]


def _start(env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mirror", *COMMAND, *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )


def _batch_names(upstream: Emulator) -> list[list[str]]:
    return [r.query["names"] for r in upstream.requests if "batchGet" in r.path]


def _wait_for_batches(upstream: Emulator, proc: subprocess.Popen[str], count: int) -> None:
    deadline = time.monotonic() + 60
    while len(_batch_names(upstream)) < count and proc.poll() is None:
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.01)


def test_a_crawl_killed_ten_times_finishes_with_every_document_exact(
    upstream: Emulator, env: dict[str, str]
) -> None:
    rng = random.Random(11)
    kills = 0
    while kills < KILLS:
        before = len(_batch_names(upstream))
        proc = _start(env)
        # Somewhere in the next stretch of batches: early, mid-level, between levels.
        _wait_for_batches(upstream, proc, before + rng.randint(1, 12))
        time.sleep(rng.random() * 0.05)
        if proc.poll() is not None:
            proc.communicate()
            break  # finished before the kill: the rest of the drill has nothing to kill
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)  # reaped, and its pipes closed
        kills += 1
    assert kills == KILLS, "the crawl finished too early for ten kills; make it longer"

    final = _start(env, "--json")
    out, err = final.communicate(timeout=120)
    assert final.returncode == 0, err
    report = json.loads(out)
    assert report["failed"] == [] and report["queued"] == 0 and report["missing"] == []
    assert report["known"] == COUNT
    assert report["fetched"] + report["alreadyHad"] == COUNT

    db = env["DK_MIRROR_DB"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = dict(conn.execute("SELECT name, content_sha256 FROM documents"))
        states = Counter(s for (s,) in conn.execute("SELECT state FROM crawl_frontier"))
    assert set(states) <= {"fetched", "had"}
    want = {d["name"]: hashlib.sha256(d["content"].encode()).hexdigest() for d in DOCS}
    assert stored == want  # every page, byte for byte; nothing off-site or from code blocks

    # A kill loses at most the batches in flight then: one per worker.
    asked = Counter(n for names in _batch_names(upstream) for n in names)
    twice = sum(count - 1 for count in asked.values())
    assert twice <= KILLS * CONCURRENCY * 20, twice


def test_ctrl_c_commits_what_is_done_exits_130_and_says_how_to_continue(
    upstream: Emulator, env: dict[str, str]
) -> None:
    proc = _start(env)
    _wait_for_batches(upstream, proc, 8)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Aborted!" not in err
    assert "run the same command again to continue" in err
    with sqlite3.connect(env["DK_MIRROR_DB"]) as conn:
        saved = {n for (n,) in conn.execute("SELECT name FROM documents")}
    assert saved and len(saved) < COUNT

    upstream.reset()
    rest = _start(env, "--json")
    out, err = rest.communicate(timeout=120)
    assert rest.returncode == 0, err
    report = json.loads(out)
    assert report["resumed"] and report["known"] == COUNT
    asked = {n for names in _batch_names(upstream) for n in names}
    assert not asked & saved  # what Ctrl-C committed is never asked for again
