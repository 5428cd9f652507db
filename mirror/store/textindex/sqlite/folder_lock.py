"""An exclusive lock between processes on a file (flock on POSIX, msvcrt.locking on Windows).

Why not the filelock package: importing it costs ~40 ms (it brings in asyncio), and the
search index's lock is taken by a cold `dk-mirror search --offline`, which costs less than that
in all. The lock is the operating system's: a process that dies releases it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# How often a waiting acquire tries again.
_POLL = 0.01


class FolderLock:
    """Held by one process at a time; re-entrant inside the process (the caller serializes
    its threads, e.g. with a threading.RLock, and nests acquire/release pairs)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    def acquire(self, timeout: float | None = None) -> bool:
        """Take the lock, waiting up to `timeout` seconds (None: as long as it takes); False
        when another process held it all that time."""
        if self._depth:
            self._depth += 1
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not _try_lock(fd):
            if deadline is not None and time.monotonic() >= deadline:
                os.close(fd)
                return False
            time.sleep(_POLL)
        self._fd, self._depth = fd, 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            _unlock(fd)
            os.close(fd)


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
