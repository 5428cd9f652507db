"""One way to write a file a user keeps: atomically, durably, never half-written under its name."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import OutputError

# What to do about the usual reasons a file cannot be written, by errno.
_ELSEWHERE = "write it to another folder (or free some space there)"
_HINTS = {
    errno.ENOSPC: "the disk is full: free some space, or write it to another disk",
    errno.EDQUOT: "the disk quota is used up: free some space, or write it to another disk",
    errno.EROFS: "that file system is read-only: write it to another folder",
    errno.EACCES: "you may not write there: choose a folder you can write to",
    errno.EPERM: "you may not write there: choose a folder you can write to",
    errno.ENOENT: "its folder does not exist: create it, or check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder: check the path",
    errno.EISDIR: "that is a folder: give a file name",
}


@contextlib.contextmanager
def atomic_file(
    target: Path, *, make_parents: bool = False, label: str = "", durable: bool = True
) -> Iterator[BinaryIO]:
    """A binary file that appears at `target` only when the block succeeds, fsynced first.

    The temp file sits beside the target (so the rename is atomic) under a random name (so two
    writers never share one); on any failure, Ctrl-C included, it is removed. A missing folder
    is an error unless `make_parents` (a mistyped output path should not grow folders).
    An OSError (a full disk, a read-only folder) is raised as OutputError naming `label` before
    the path ("snapshot "): the block should do nothing but write to the file.
    `durable=False` skips the fsyncs, for the thousands of files of an export that is made
    again from the store in seconds: still never half-written under its name, but a power
    cut may lose it.
    """
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        try:
            if make_parents:
                target.parent.mkdir(parents=True, exist_ok=True)
            # os.open (not mkstemp) so the umask decides the permissions, as for any file we
            # write.
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            fd = os.open(temp, flags, 0o666)
        except OSError as exc:
            raise cannot_write(target, exc, label) from exc
        with open(fd, "wb") as out:
            yield out
            out.flush()
            if durable:
                os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        # One handler from before the temp file exists: a Ctrl-C that lands just after
        # os.open returned (before a block of its own began) must remove the file too.
        if not isinstance(exc.__cause__, FileExistsError):  # O_EXCL: another writer's name
            with contextlib.suppress(OSError):
                temp.unlink()
        if isinstance(exc, OSError):
            raise cannot_write(target, exc, label) from exc
        raise
    if durable:
        _fsync_dir(target.parent)


def cannot_write(target: Path | str, exc: OSError, label: str = "") -> OutputError:
    """The error for `target`, which the user asked for, failing to be written: why, and
    what to do about it."""
    hint = _HINTS.get(exc.errno or 0, _ELSEWHERE)
    return OutputError(f"cannot write {label}{target}: {exc.strerror or exc}", hint=hint)


def make_folder(folder: Path) -> None:
    """`folder` and its parents, made if missing (an OSError raised as OutputError)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cannot_write(folder, exc) from exc


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
