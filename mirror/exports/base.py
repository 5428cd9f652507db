"""What an export format is: a function from the selected pages to files.

A format is a module with a `FORMAT` callable: given the values of its own options, it makes
a `Format` run, which is handed a `Pages` (every selected page's metadata, sorted by name, and
a stream of the documents in the same order) and yields `OutFile`s: a path relative to OUT
(POSIX, never absolute, never `..`) and the file's exact bytes. Everything else is the
machinery's (run.py): selecting and reading documents, progress, comparing with what OUT
already holds, writing by temp file and rename, removing files no longer exported, the
licence notice, the summary. So a format must be deterministic (same pages and options, same
bytes: sort, and put no wall-clock time in any file) and must yield each path once.

A format whose export is one file (zim) is a `FileFormat` instead: it writes the whole file
at a temporary path it is given, and stores there the digest of the content it was made from;
the machinery (onefile.py) compares that digest first, so a re-export with no change writes
nothing, and renames the file into place only when it is complete.

To add a format: write `mirror/exports/<name>.py` with `FORMAT`, and list it (with any options
of its own) in formats.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple, Protocol

from ..models import Document, data_source_of
from .source import Selection


@dataclass(frozen=True, slots=True)
class Entry:
    """One exported page, without its content: what indexes and links need."""

    name: str
    title: str | None
    description: str | None
    uri: str | None
    update_time: str | None
    content_bytes: int

    @property
    def data_source(self) -> str:
        """The page's host (data source)."""
        return data_source_of(self.name)

    @classmethod
    def of(cls, doc: Document) -> Entry:
        """The entry of a document."""
        return cls(
            name=doc.name,
            title=doc.title,
            description=doc.description,
            uri=doc.uri,
            update_time=doc.update_time,
            content_bytes=len((doc.content or "").encode("utf-8")),
        )


class Pages:
    """The selected pages: `entries` (all, by name), `documents()` (streamed, same order), and
    the `selection` that chose them."""

    def __init__(
        self,
        entries: list[Entry],
        read: Callable[[], Iterator[Document]],
        progress: Callable[[int, int], None] | None = None,
        selection: Selection | None = None,
    ) -> None:
        self.entries = entries
        self.selection = selection or Selection()
        self.names = frozenset(e.name for e in entries)
        self._read = read
        self._progress = progress

    def documents(self) -> Iterator[Document]:
        """Each selected document with its content, in name order (progress is counted here)."""
        total = len(self.entries)
        done = 0
        for doc in self._read():
            if doc.name not in self.names:
                continue  # written to the store since the entries were listed
            yield doc
            done += 1
            if self._progress is not None:
                self._progress(done, total)


class OutFile(NamedTuple):
    """One file of an export: where under OUT, and its bytes."""

    path: PurePosixPath
    data: bytes


class Format(Protocol):
    """One run of an export format (see the module docstring): made from the option values
    by the module's `FORMAT(options)`, then asked for its files once."""

    # What the run wants the user told (what was left out, and why), filled by `files`.
    notes: list[str]

    def files(self, pages: Pages) -> Iterator[OutFile]:
        """Every file of the export, each path once, bytes deterministic."""
        ...


# A format module's FORMAT: option values (by option key, see formats.py) to one run.
FormatFactory = Callable[[Mapping[str, Any]], Format]


class FileFormat(Protocol):
    """One run of a format whose export is a single file (see the module docstring)."""

    notes: list[str]

    def stored_digest(self, path: Path) -> str | None:
        """The content digest an earlier export stored in the file at `path`; None when the
        file is not one this format wrote (the machinery then refuses to replace it)."""
        ...

    def write(self, pages: Pages, target: Path, digest: str) -> None:
        """Write the whole export at `target` (a temporary path), storing `digest` in it."""
        ...


# A one-file format module's FORMAT.
FileFormatFactory = Callable[[Mapping[str, Any]], FileFormat]
