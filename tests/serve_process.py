"""`dk-mirror serve` as a real process (started with this interpreter), for tests that need
the whole program: its start-up, its threads, its memory."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mirror.config import ENV_SEMANTIC
from tests.user_env import user_env

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT = 60.0


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment without dk-mirror's settings, with `home` as DK_MIRROR_HOME; the
    suite's semantic switch (tests/conftest.py) stays as the test has it."""
    keep = user_env()
    switch = {k: v for k, v in os.environ.items() if k == ENV_SEMANTIC}
    return {**keep, **switch, "DK_MIRROR_HOME": str(home), "PYTHONPATH": str(ROOT), **extra}


@dataclass
class Served:
    """A running server: its base URL, its process, what it wrote to stderr so far."""

    url: str
    proc: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(self.lines)


@contextlib.contextmanager
def serve(db: Path, *args: str, env: Mapping[str, str]) -> Iterator[Served]:
    """`dk-mirror serve --db DB ARGS` on 127.0.0.1, any free port, until the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--db", str(db), "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(env),
    )
    served = Served("", proc)
    found = threading.Event()

    def drain() -> None:
        # Read stderr for the server's whole life, so a full pipe never blocks it.
        assert proc.stderr is not None
        for line in proc.stderr:
            served.lines.append(line)
            match = re.search(r"dk-mirror serve: (http://127\.0\.0\.1:\d+)", line)
            if match and not found.is_set():
                served.url = match.group(1)
                found.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not found.wait(START_TIMEOUT):
            pytest.fail("dk-mirror serve did not start:\n" + served.log)
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        reader.join(10)
        assert proc.stderr is not None
        proc.stderr.close()
