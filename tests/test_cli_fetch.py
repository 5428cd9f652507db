"""`dk-mirror fetch` as a user runs it: exit codes, the failure report, and Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.service.documents import FETCH_CONCURRENCY
from tests.emulator import Emulator, Fault
from tests.emulator_fixtures import synthetic_documents

DOCS = synthetic_documents(200)
NAMES = [d["name"] for d in DOCS]


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    """An emulator holding the 200 synthetic documents."""
    with Emulator(DOCS) as running:
        yield running


@pytest.fixture
def env(tmp_path: Path, upstream: Emulator) -> dict[str, str]:
    """The environment a user would set to fetch from `upstream` into a fresh store."""
    return {
        "DK_MIRROR_DB": str(tmp_path / "store.sqlite3"),
        "DK_MIRROR_UPSTREAM": upstream.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": upstream.api_key or "",
    }


def _stored(db: str) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def _interruptible() -> None:
    # A test run started in the background (a CI runner, `cmd &`) inherits SIGINT ignored,
    # and Python then never turns Ctrl-C into KeyboardInterrupt: give the child the default
    # a user's terminal gives it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _dk_mirror(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mirror", *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )


def test_a_failed_batch_is_listed_and_exits_1_and_a_rerun_fetches_only_it(
    env: dict[str, str], upstream: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    # Waits patched to zero: the CLI builds its own Mirror, so patch the sleep it looks up.
    monkeypatch.setattr("mirror.interrupts.sleep", lambda _s: None)
    bad = NAMES[40:60]
    upstream.inject(Fault("status", status=503), times=-1, name=bad[0])
    runner = CliRunner()
    result = runner.invoke(cli, ["fetch", *NAMES[:100], "--json"], catch_exceptions=False)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["fetched"] == 80 and report["failed"] == bad and report["missing"] == []
    assert "gave up after 5 attempt(s)" in report["error"] and report["hint"]
    text = runner.invoke(cli, ["fetch", *NAMES[:100]], catch_exceptions=False)
    assert text.exit_code == 1
    assert "0 fetched, 80 already cached, 0 not found upstream, 20 failed (of 100)" in text.stderr
    assert f"failed: {bad[0]}" in text.stderr and "HTTP 503" in text.stderr
    assert "run the same command again" in text.stderr
    upstream.reset()
    done = runner.invoke(cli, ["fetch", *NAMES[:100]], catch_exceptions=False)
    assert done.exit_code == 0 and "20 fetched, 80 already cached" in done.stderr
    assert upstream.count("/v1/documents:batchGet") == 1


@pytest.mark.slow
def test_a_name_not_found_upstream_exits_3(env: dict[str, str]) -> None:
    ghost = "documents/docs.example.dev/guide/no-such-page"
    proc = _dk_mirror(env, "fetch", NAMES[0], ghost)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert f"not found: {ghost}" in err and "1 fetched" in err


@pytest.mark.slow
def test_ctrl_c_saves_what_was_fetched_exits_130_and_a_rerun_continues(
    env: dict[str, str], upstream: Emulator
) -> None:
    # Each batch takes 0.5 s, so the interrupt lands mid-run: 10 batches, 4 at a time, are
    # 1.5 s. A request past the first ones in flight means a batch has answered and is saved.
    upstream.inject(Fault("latency", seconds=0.5), times=-1)
    proc = _dk_mirror(env, "fetch", *NAMES)
    deadline = time.monotonic() + 30
    while upstream.count() < FETCH_CONCURRENCY + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Aborted!" not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1, err
    saved = _stored(env["DK_MIRROR_DB"])
    assert 20 <= saved < 200 and saved % 20 == 0  # whole batches, each committed
    assert f"interrupted: {saved} document(s) saved" in lines[0]
    assert "run the same command again" in lines[0]

    upstream.reset()
    rerun = _dk_mirror(env, "fetch", *NAMES)
    _, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert f"{200 - saved} fetched, {saved} already cached" in err
    assert upstream.count("/v1/documents:batchGet") == (200 - saved) // 20
    assert _stored(env["DK_MIRROR_DB"]) == 200
