"""When a snapshot file was written: its commit time when git tracks it, else its mtime.

A snapshot's bytes hold no wall clock (the same documents give the same bytes), so its age
comes from outside the file. A CI checkout gives every file the checkout's time as mtime, so
for a snapshot committed to a repository the time of the last commit that touched it is the
truth; the mtime is used only for a file git does not track, or that has uncommitted changes
(written since that commit). In a shallow clone the oldest commit held stands in for the
file's real one: the age then reads younger than it is, never older, so `--max-age` cannot
fail a snapshot that is within it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WrittenAt:
    """A POSIX time and where it came from: "git commit" or "file modification time"."""

    timestamp: float
    source: str


def snapshot_written_at(path: Path) -> WrittenAt:
    """The time `path` was written: its last commit when committed and unchanged, else mtime."""
    committed = _commit_time(path)
    if committed is not None:
        return WrittenAt(committed, "git commit")
    return WrittenAt(os.stat(path).st_mtime, "file modification time")


def _commit_time(path: Path) -> float | None:
    git = shutil.which("git")
    if git is None:
        return None
    folder, name = str(path.resolve().parent), path.name
    # A file with changes git has not committed was written after its commit.
    status = _git(git, folder, "status", "--porcelain", "--", name)
    if status is None or status.strip():
        return None
    stamp = _git(git, folder, "log", "-1", "--format=%ct", "--", name)
    return float(stamp) if stamp and stamp.strip().isdigit() else None


def _git(git: str, folder: str, *args: str) -> str | None:
    """git's output, or None outside a repository or on any failure (no git is no error)."""
    try:
        done = subprocess.run(
            [git, "-C", folder, *args],
            capture_output=True, text=True, timeout=10, check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
