"""Writing an export's files into OUT: only what changed, never half a file, nothing stale.

A file is rewritten only when its bytes differ from what OUT holds (so a re-export with no
change rewrites nothing, and tools that watch modification times see only real changes), and
then through a temporary file renamed over it (so Ctrl-C or a full disk never leaves part of a
page under its name). Every path is checked to stay inside OUT (mdpaths.check_inside).

OUT's manifest (MANIFEST, written last) lists the files the export wrote, and its format. The
next export removes the files the manifest lists that it no longer writes (pages no longer
selected), and nothing else: a file dk-mirror did not write is never deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import InvalidInput
from ..files import atomic_file, cannot_write
from ..snapshots.mdpaths import UnsafePath, check_inside

MANIFEST = PurePosixPath(".dk-mirror-export.json")


class Manifest:
    """What an earlier export wrote into OUT: its format and files."""

    def __init__(self, format_name: str, files: Iterable[str]) -> None:
        self.format_name = format_name
        self.files = frozenset(files)

    @classmethod
    def read(cls, root: Path) -> Manifest | None:
        """OUT's manifest, or None when no export was written there."""
        path = root / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(str(data["format"]), [str(f) for f in data["files"]])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(
                f"{path} is not a dk-mirror export manifest ({exc})",
                hint="delete it (files it listed are then kept), or export to another folder",
            ) from exc

    def write(self, root: Path) -> None:
        """Save the manifest (sorted, so it is as deterministic as the files it lists)."""
        body = {"format": self.format_name, "files": sorted(self.files)}
        data = (json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
        if _holds(root / MANIFEST, data):
            return  # a re-export with no change touches no file at all
        with atomic_file(root / MANIFEST, label="export manifest ", durable=False) as out:
            out.write(data)


class TreeWriter:
    """Writes files under `root`, counting them written / unchanged, and removes stale ones."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: set[str] = set()
        self.written = 0
        self.unchanged = 0
        self.bytes = 0

    def write(self, relative: PurePosixPath, data: bytes) -> None:
        """Put `data` at `relative` under root, unless it is there already."""
        key = relative.as_posix()
        if key in self.seen or key == MANIFEST.as_posix():
            raise UnsafePath(f"an export wrote {key!r} twice (or over its manifest)")
        target = check_inside(self.root, relative)
        self.seen.add(key)
        self.bytes += len(data)
        if _holds(target, data):
            self.unchanged += 1
            return
        with atomic_file(target, make_parents=True, durable=False) as out:
            out.write(data)
        self.written += 1

    def remove(self, previous: Iterable[str]) -> int:
        """Delete the files of `previous` (an earlier export's) not written this time."""
        removed = 0
        for key in sorted(set(previous) - self.seen):
            try:
                target = check_inside(self.root, PurePosixPath(key))
            except UnsafePath:
                continue  # a hand-edited manifest naming something outside: never touched
            try:
                target.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise cannot_write(target, exc) from exc
            removed += 1
            _prune_empty(target.parent, self.root.resolve())
        return removed


def _holds(target: Path, data: bytes) -> bool:
    # Size first: most changed pages change length, and then the file need not be read.
    try:
        if target.stat().st_size != len(data):
            return False
        return target.read_bytes() == data
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return False


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents up to (not including) root while they are empty."""
    while folder != root and folder.is_relative_to(root):
        with contextlib.suppress(OSError):
            os.rmdir(folder)
        if folder.exists():
            return
        folder = folder.parent
