"""The change log under kill -9: a crawl and a refresh killed at random moments, on real
processes, leave exactly one event per change of content, never an event without its change
nor a change without its event."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.change_log_replay import replay_change_log
from tests.emulator import Emulator, Fault

# `env`: a user's environment for `upstream` (this module's), a fresh store, pacing lifted.
from tests.test_crawl_kill import HOST, _batch_names, _interruptible, _linked, env  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

COUNT = 600
EDITED = range(0, COUNT, 4)  # the pages upstream changes before the refresh
DOCS = _linked(COUNT)
CRAWL = ["crawl", DOCS[0]["name"], "--prefix", f"{HOST}/guide/", "--concurrency", "4"]
REFRESH = ["refresh", "--concurrency", "4"]


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    """The linked pages, each answer a little slow so kills land mid-run."""
    with Emulator(DOCS) as running:
        running.inject(Fault("latency", seconds=0.02), times=-1)
        yield running


def _run(environ: dict[str, str], command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mirror", *command], env=environ, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible,
    )  # fmt: skip


def _kill_during(upstream: Emulator, environ: dict[str, str], command: list[str], kills: int,
                 rng: random.Random) -> int:  # fmt: skip
    """Start `command` and SIGKILL it after a few more batch fetches, `kills` times; returns
    the kills that landed (a run may finish first). The log is checked after each one."""
    landed = 0
    for _ in range(kills):
        before = len(_batch_names(upstream))
        proc = _run(environ, command)
        deadline = time.monotonic() + 60
        while len(_batch_names(upstream)) < before + rng.randint(1, 6) and proc.poll() is None:
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.005)
        time.sleep(rng.random() * 0.04)
        if proc.poll() is not None:
            proc.communicate()
            break
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        landed += 1
        replay_change_log("sqlite:///" + environ["DK_MIRROR_DB"])
    return landed


def test_crawl_and_refresh_killed_keep_one_event_per_change(
    upstream: Emulator,
    env: dict[str, str],  # noqa: F811  (the fixture imported above)
) -> None:
    rng = random.Random(31)
    assert _kill_during(upstream, env, CRAWL, 4, rng) == 4
    done = _run(env, CRAWL)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert replay_change_log("sqlite:///" + env["DK_MIRROR_DB"]) == {"added": COUNT}

    for i in EDITED:
        upstream.put({**DOCS[i], "content": DOCS[i]["content"] + "\nEdited upstream.\n"})
    assert _kill_during(upstream, env, REFRESH, 3, rng) == 3
    done = _run(env, REFRESH)
    _, err = done.communicate(timeout=120)
    assert done.returncode == 0, err
    assert replay_change_log("sqlite:///" + env["DK_MIRROR_DB"]) == {
        "added": COUNT,
        "changed": len(EDITED),
    }
