"""A command whose output's reader went away (`dk-mirror ls | head -1`) ends quietly with the
shell's status for it (128 + SIGPIPE), as a Unix tool that dies of SIGPIPE does: no
traceback, no error, not click's silent exit 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mirror.cli.main import EXIT_BROKEN_PIPE

from .cli_store import sample_env

NAME = "documents/developer.chrome.com/docs/extensions/migrating/to-service-workers"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The sample imported into a store of its own (words only: no model to load)."""
    return sample_env(tmp_path_factory.mktemp("pipes"))


def _into_a_closed_pipe(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the command with its output a pipe no one reads any more: every write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader left before the first line (`| head -0`, or a head done)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mirror", *args],
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["ls"],
        ["--offline", "search", "service worker lifecycle"],
        ["--offline", "search", "--json", "service worker lifecycle"],
        ["--offline", "get", NAME],
        ["--offline", "answer", "how long does a service worker live"],
    ],
)
def test_a_command_whose_reader_left_exits_quietly(args: list[str], env: dict[str, str]) -> None:
    # The command works, written to a reader that stays.
    kept = subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kept.returncode == 0 and kept.stdout, kept.stderr
    code, stderr = _into_a_closed_pipe(args, env)
    assert code == EXIT_BROKEN_PIPE, stderr
    # Nothing said but what the command says before its output (an answer's warning).
    assert kept.stderr.startswith(stderr), stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
