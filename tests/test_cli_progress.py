"""Progress of long commands: one tqdm bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli import progress
from mirror.cli.main import cli
from mirror.semantic import model
from tests.emulator import Emulator
from tests.emulator_fixtures import synthetic_documents
from tests.user_env import user_env

DOCS = synthetic_documents(30)
NAMES = [d["name"] for d in DOCS]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def upstream() -> Iterator[Emulator]:
    with Emulator(DOCS) as running:
        yield running


@pytest.fixture
def env(tmp_path: Path, upstream: Emulator) -> dict[str, str]:
    """What a user sets to fetch from `upstream` into a fresh store."""
    return {
        "DK_MIRROR_DB": str(tmp_path / "store.sqlite3"),
        "DK_MIRROR_UPSTREAM": upstream.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": upstream.api_key or "",
    }


def test_a_bar_follows_a_growing_total_on_a_terminal_and_stays_silent_elsewhere() -> None:
    terminal = _Terminal()
    bar = progress.Bar("crawling", stream=terminal)
    bar.update(5, 10)
    bar.update(20, 40, note="3 retries")  # more work was found: the total grew
    bar.close()
    shown = terminal.getvalue()
    assert "crawling" in shown and "20/40" in shown and "doc/s" in shown and "3 retries" in shown
    piped = io.StringIO()
    with progress.Bar("fetching", stream=piped) as update:
        update(1, 2)
        update(2, 2)
    assert piped.getvalue() == ""


def test_a_bar_keeps_moving_while_nothing_finishes() -> None:
    # A crawl narrowing a batch of broken links makes one paced call per name and finishes
    # nothing for a minute: the bar must still redraw (clock, ETA, quota wait), not freeze
    # at its last count.
    terminal = _Terminal()
    bar = progress.Bar("crawling", stream=terminal)
    for done in (20, 40, 60):  # batches arriving, as tqdm tunes how often it redraws
        time.sleep(0.12)
        bar.update(done, 120, note=f"{done / 10:.1f}s waiting for quota")
    time.sleep(0.6)  # longer than the bar waits between redraws of an unchanged count
    bar.update(60, 120, note="42.0s waiting for quota")
    frames = [f for f in terminal.getvalue().split("\r") if "doc/s" in f]
    bar.close()
    assert "42.0s waiting for quota" in frames[-1]
    # The rate (and so tqdm's time left) is the average so far: it falls while nothing comes,
    # rather than standing at what the last burst of batches made it.
    rates = [float(re.search(r"([\d.]+)doc/s", f).group(1)) for f in frames[-2:]]  # type: ignore[union-attr]
    assert rates[1] < rates[0], frames[-2:]


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> _Terminal:
    """stderr as a terminal, for the bars: click's runner captures the real one."""
    screen = _Terminal()
    monkeypatch.setattr(progress, "_stderr", lambda: screen)
    return screen


def test_fetch_and_refresh_draw_the_one_bar(
    env: dict[str, str], terminal: _Terminal, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    fetched = CliRunner().invoke(cli, ["fetch", "--json", *NAMES])
    assert fetched.exit_code == 0, fetched.output
    assert json.loads(fetched.stdout)["fetched"] == len(NAMES)  # data alone on stdout
    assert "fetching" in terminal.getvalue() and f"{len(NAMES)}/{len(NAMES)}" in terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    refreshed = CliRunner().invoke(cli, ["refresh", "--json"])
    assert refreshed.exit_code == 0, refreshed.output
    assert "refreshing" in terminal.getvalue() and "doc/s" in terminal.getvalue()


@pytest.mark.skipif(not model.status().available, reason="needs the model's packages")
def test_embedding_draws_the_one_bar(
    env: dict[str, str], terminal: _Terminal, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert CliRunner().invoke(cli, ["fetch", *NAMES[:3]]).exit_code == 0
    terminal.seek(0)
    terminal.truncate()
    rebuilt = CliRunner().invoke(cli, ["index", "rebuild", "--semantic"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "embedding" in terminal.getvalue() and "3/3" in terminal.getvalue()


def _fetch(env: dict[str, str], stderr: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mirror", "fetch", *NAMES],
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )


def _read_until_closed(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal and everything was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.slow  # dk-mirror in a process of its own, on a pseudo-terminal
def test_fetch_draws_its_bar_on_a_real_terminal_and_none_into_a_pipe(
    env: dict[str, str], tmp_path: Path
) -> None:
    screen, tty = pty.openpty()
    # A new pseudo-terminal is 0 columns wide; a user's is not.
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        child = _fetch(env, tty)
        os.close(tty)  # the child holds the terminal now; reading ends when it exits
        shown = _read_until_closed(screen).decode()
        assert child.wait(timeout=120) == 0, shown
    finally:
        os.close(screen)
    assert "fetching" in shown and f"{len(NAMES)}/{len(NAMES)}" in shown and "doc/s" in shown
    piped = _fetch({**env, "DK_MIRROR_DB": str(tmp_path / "other.sqlite3")}, subprocess.PIPE)
    _, err = piped.communicate(timeout=120)
    assert piped.returncode == 0, err
    # Into a pipe (a log, CI) the summary is all stderr carries: no bar, no control codes.
    summary = f"{len(NAMES)} fetched, 0 already cached, 0 not found upstream, 0 failed"
    assert err.decode() == f"{summary} (of {len(NAMES)})\n"


@pytest.mark.slow  # dk-mirror in a process of its own, on a pseudo-terminal
@pytest.mark.skipif(not model.status().available, reason="needs the model's packages")
def test_the_embedding_bar_draws_on_a_terminal_of_zero_columns(tmp_path: Path) -> None:
    # Some CI terminals (and `stty cols 0`) report 0 columns: the bar took that at its word
    # and drew a one-character meter with its stats cut short.
    screen, tty = pty.openpty()
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 0, 0, 0))
    clean = user_env()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "mirror", "import", "--sample"],
            env={
                **clean,
                "DK_MIRROR_HOME": str(tmp_path / "home"),
                "DK_MIRROR_DB": str(tmp_path / "store.sqlite3"),
                "DK_MIRROR_SEMANTIC": "on",
            },
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=tty,
        )
        os.close(tty)
        shown = _read_until_closed(screen).decode()
        assert child.wait(timeout=300) == 0, shown
    finally:
        os.close(screen)
    done = [line for line in re.split(r"[\r\n]", shown) if line.startswith("embedding: 100%")]
    assert done, shown
    # The fallback width (80, less the column tqdm leaves free): a meter, and the stats whole.
    assert len(done[-1]) == progress.FALLBACK_COLUMNS - 1, done
    assert done[-1].count("█") >= 20 and done[-1].endswith("doc/s]"), done
