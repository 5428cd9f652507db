"""One way to write a file a user keeps: atomically, durably, never half-written under its name."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def atomic_file(target: Path, *, make_parents: bool = False) -> Iterator[BinaryIO]:
    """A binary file that appears at `target` only when the block succeeds, fsynced first.

    The temp file sits beside the target (so the rename is atomic) under a random name (so two
    writers never share one); on any failure, Ctrl-C included, it is removed. A missing folder
    is an error unless `make_parents` (a mistyped output path should not grow folders).
    """
    if make_parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # os.open (not mkstemp) so the umask decides the permissions, as for any file we write.
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with open(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    _fsync_dir(target.parent)


def write_atomic(target: Path, text: str, *, make_parents: bool = False) -> None:
    """Write `text` (UTF-8, `\\n` line ends) to `target` atomically and durably."""
    with atomic_file(target, make_parents=make_parents) as out:
        out.write(text.encode("utf-8"))


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the directory entry is on disk (POSIX); Windows has no
    # directory handles to sync, and some filesystems refuse: the file itself is already synced.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
