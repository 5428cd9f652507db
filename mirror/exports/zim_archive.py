"""The one module that speaks libzim (the `zim` extra, GPL-3.0): writing a ZIM, reading one key.

Importing it fails with ImportError when libzim is not installed; zim.py turns that into the
one-line error that names the extra.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from libzim.reader import Archive
from libzim.writer import Creator, Hint, Item, StringProvider

# A cluster (the unit libzim compresses) of about this many bytes; libzim's default, named
# here because the peak memory of an export grows with it (one per worker in flight).
_CLUSTER_BYTES = 2 * 1024 * 1024
# One compression thread (beside the one rendering pages): libzim compresses with zstd at
# level 19, whose context takes tens of MB per thread. Measured on the 1,984-page Chrome
# corpus: 2 threads peaked at ~250 MB, 1 at ~170 MB, for about the same CPU time.
_WORKERS = 1
# Xapian keeps the postings of up to this many pages in memory before writing them out (its
# default, 10,000, held ~20 MB more on the Chrome corpus); an explicit setting is kept.
_XAPIAN_FLUSH = ("XAPIAN_FLUSH_THRESHOLD", "200")
_TEXT = "text/plain;charset=UTF-8"


class Blob(Item):  # type: ignore[misc]  # libzim's stubs are not read (no py.typed)
    """One entry: its path in the ZIM, title, mimetype and bytes; `front` for a page a reader
    lists and searches (libzim's FRONT_ARTICLE), not for a stylesheet."""

    def __init__(self, path: str, title: str, mimetype: str, data: bytes, *, front: bool) -> None:
        super().__init__()
        self._path, self._title, self._mimetype = path, title, mimetype
        self._data, self._front = data, front

    def get_path(self) -> str:
        return self._path

    def get_title(self) -> str:
        return self._title

    def get_mimetype(self) -> str:
        return self._mimetype

    def get_contentprovider(self) -> StringProvider:
        return StringProvider(self._data)

    def get_hints(self) -> dict[Hint, int]:
        return {Hint.FRONT_ARTICLE: int(self._front), Hint.COMPRESS: 1}


class Writer:
    """A ZIM being made: entries, metadata and illustration go in; `creating` finishes it."""

    def __init__(self, creator: Creator) -> None:
        self._creator = creator

    def add(self, item: Blob) -> None:
        self._creator.add_item(item)

    def metadata(self, name: str, value: str) -> None:
        self._creator.add_metadata(name, value.encode("utf-8"), _TEXT)

    def illustration(self, size: int, png: bytes) -> None:
        self._creator.add_illustration(size, png)


@contextlib.contextmanager
def creating(path: Path, *, main_path: str, language: str) -> Iterator[Writer]:
    """A Writer making the ZIM at `path`, finished (indexes, checksum) when the block ends,
    also when it raises: libzim cannot abandon a file (a creator dropped unfinished waits
    for its threads forever), so after Ctrl-C it finishes the pages it was already given
    (a few seconds) and the caller deletes the file."""
    os.environ.setdefault(*_XAPIAN_FLUSH)  # read by Xapian when libzim opens its index
    creator = Creator(path)
    creator.config_indexing(True, language).config_verbose(False)
    creator.config_nbworkers(_WORKERS).config_clustersize(_CLUSTER_BYTES)
    creator.__enter__()  # by hand, to finish it with stdout silenced (below)
    try:
        creator.set_mainpath(main_path)
        yield Writer(creator)
    finally:
        with _stdout_to_devnull():
            creator.__exit__(None, None, None)


@contextlib.contextmanager
def _stdout_to_devnull() -> Iterator[None]:
    # libzim's finishing steps print to the process's stdout even when not verbose, and
    # stdout is where `export --json` prints its summary.
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def read_metadata(path: Path, name: str) -> str | None:
    """The metadata `name` of the ZIM at `path`; None when the file is not a ZIM or lacks it."""
    try:
        archive = Archive(path)
        if name not in archive.metadata_keys:
            return None
        return bytes(archive.get_metadata(name)).decode("utf-8")
    except (RuntimeError, OSError, UnicodeDecodeError):
        return None
