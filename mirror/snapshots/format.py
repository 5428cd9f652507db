"""Snapshot files: a pinned, hash-verified set of documents for reproducible (offline) CI.

Format v2 (written since the mirror had to hold a million documents) is format v1 below with
the manifest's entries moved out of the manifest line, so that no line, and no reader or
writer, holds every document's hashes: after each ENTRY_BLOCK document and tombstone lines
comes one line listing their entries, in the same order,

    {"entries": [{"name", "content", "metadata"} | {"name", "removed": true}, ...]}

and the manifest (still the last line) has no `entries` key, `version` 2. Readers check each
block against the lines before it (naming every document that does not match, as v1 did) and
the count and root at the manifest. Every v1 file still reads and verifies as before.

Format v1 is one gzip member (mtime 0, no file name, level 9) holding UTF-8 JSON lines, each
canonical JSON (sorted keys, separators "," ":", no ASCII escaping) ending in "\\n":

    {"document": {...Document JSON with content, without `view`...}}    sorted by name
    {"tombstone": "documents/..."}                                     delta snapshots only
    {"manifest": {"format": "dk-mirror-snapshot", "version": 1, "kind": "full"|"delta",
                  "count": N, "entries": [{"name", "content", "metadata"} | {"name",
                  "removed": true}, ...], "root": "sha256:..", "base": "sha256:.."|null,
                  "selection": {...}}}                                 always the last line

`content` hashes the Markdown's UTF-8; `metadata` hashes the canonical JSON of the document
without `content` and `view`. `root` hashes the canonical JSON of [[name, content, metadata],
...] over the whole state the file stands for (a delta: its base with the delta applied), so a
delta's root equals the root of a full export of the same documents. Same documents, same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..canonical import canonical_json, sha256_tag
from ..errors import InvalidInput, OutputError
from ..files import atomic_file
from ..models import Document
from .background import BackgroundWriter

FORMAT = "dk-mirror-snapshot"
VERSION = 2
# Every version this code reads (and writes, on request: tests keep v1 files readable).
VERSIONS = (1, 2)
# Entries listed per `entries` line in v2: bounds what a reader or writer holds at once.
ENTRY_BLOCK = 1000
# Fixed so the same documents give the same bytes; level 9 because snapshots are archived.
COMPRESSLEVEL = 9
Kind = Literal["full", "delta"]
State = dict[str, tuple[str, str]]
HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
# How many problems an exception message shows; VerifyReport keeps them all.
SHOWN = 10


class SnapshotError(InvalidInput):
    """A snapshot that cannot be written, read or applied; `.names` are the documents at fault."""

    def __init__(self, message: str, *, names: Sequence[str] = (), hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.names = list(names)


def _api(doc: Document) -> dict[str, Any]:
    # `view` says how a copy was requested, not what the document is: two copies of one document
    # must give the same bytes, so it is never written.
    data = doc.to_api()
    data.pop("view", None)
    return data


def document_hashes(doc: Document) -> tuple[str, str]:
    """(content hash, metadata hash) of a document that has content."""
    if doc.content is None:
        raise SnapshotError(
            f"{doc.name} has no content, and a snapshot only holds documents with content",
            names=[doc.name],
            hint="fetch the document in full (dk-mirror fetch) before exporting it",
        )
    meta = _api(doc)
    meta.pop("content")
    return sha256_tag(doc.content.encode("utf-8")), sha256_tag(canonical_json(meta).encode())


class RootHasher:
    """Hashes canonical JSON of [[name, content, metadata], ...] without holding the list."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256(b"[")
        self.last: str | None = None

    def add(self, name: str, content: str, metadata: str) -> None:
        if self.last is not None and name <= self.last:
            raise SnapshotError(
                f"documents must come sorted by name without repeats: {name} came after "
                f"{self.last}",
                names=[name],
                hint="this is a bug in the caller: sort the documents by name",
            )
        sep = b"," if self.last is not None else b""
        self._hash.update(sep + canonical_json([name, content, metadata]).encode("utf-8"))
        self.last = name

    def hexdigest(self) -> str:
        final = self._hash.copy()
        final.update(b"]")
        return "sha256:" + final.hexdigest()


def root_digest(entries: Iterable[tuple[str, str, str]]) -> str:
    """Root digest of a state given as (name, content hash, metadata hash) in any order."""
    hasher = RootHasher()
    for name, content, metadata in sorted(entries):
        hasher.add(name, content, metadata)
    return hasher.hexdigest()


def state_root(state: Mapping[str, tuple[str, str]]) -> str:
    """Root digest of a state mapping name -> (content hash, metadata hash)."""
    return root_digest((name, c, m) for name, (c, m) in state.items())


@dataclass(frozen=True, slots=True)
class Entry:
    """One manifest entry: a document's hashes, or (both None) a tombstone."""

    name: str
    content: str | None = None
    metadata: str | None = None

    @property
    def removed(self) -> bool:
        """True for a tombstone."""
        return self.content is None

    def to_json(self) -> dict[str, Any]:
        """The entry as the manifest stores it."""
        if self.removed:
            return {"name": self.name, "removed": True}
        return {"name": self.name, "content": self.content, "metadata": self.metadata}


@dataclass(frozen=True, slots=True)
class Manifest:
    """The last line of a snapshot: what it holds and the digests that pin it."""

    kind: Kind
    # Every entry, or none when they were streamed and not kept (v2; `size` counts them). Not
    # compared: `root` (and for a delta, the lines) pin them, and a streamed manifest equals
    # the same one read whole.
    entries: tuple[Entry, ...] = field(compare=False)
    root: str
    base: str | None = None
    selection: Mapping[str, Any] = field(default_factory=dict)
    version: int = VERSION
    size: int | None = field(default=None, compare=False)

    @property
    def count(self) -> int:
        """Number of entry lines (documents and tombstones)."""
        return len(self.entries) if self.size is None else self.size

    @property
    def complete(self) -> bool:
        """Whether `entries` holds every entry (not streamed past)."""
        return len(self.entries) == self.count

    def to_json(self) -> dict[str, Any]:
        """The manifest object as written (v1 lists its entries; v2 has them on own lines)."""
        listed = {"entries": [e.to_json() for e in self.entries]} if self.version == 1 else {}
        return {
            "format": FORMAT,
            "version": self.version,
            "kind": self.kind,
            "count": self.count,
            **listed,
            "root": self.root,
            "base": self.base,
            "selection": dict(self.selection),
        }

    def summary(self) -> dict[str, Any]:
        """What `snapshot export --json` reports: kind, count and digests (not the entries)."""
        return {"kind": self.kind, "count": self.count, "root": self.root, "base": self.base}

    def state(self) -> State:
        """name -> (content, metadata) hashes of a full snapshot."""
        if self.kind != "full":
            raise SnapshotError(
                "a delta snapshot alone is not a state",
                hint="apply it to its base with apply_delta() first",
            )
        if not self.complete:
            raise SnapshotError(
                "this manifest was streamed without its entries",
                hint="read the snapshot with snapshots.read.read() to hold its state",
            )
        return {e.name: (e.content, e.metadata) for e in self.entries if e.content and e.metadata}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A verified snapshot: its manifest, documents (sorted) and tombstones (sorted)."""

    manifest: Manifest
    documents: list[Document]
    tombstones: list[str]

    def state(self) -> State:
        """name -> hashes of a full snapshot."""
        return self.manifest.state()


# --- writing ------------------------------------------------------------------------------------


def _line(obj: object) -> bytes:
    return (canonical_json(obj) + "\n").encode("utf-8")


def _check_selection(selection: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return dict(json.loads(canonical_json(dict(selection))))
    except (TypeError, ValueError) as exc:
        raise SnapshotError(f"snapshot selection is not plain JSON: {exc}") from None


def _write(
    path: str | os.PathLike[str],
    docs: Iterable[Document],
    selection: Mapping[str, Any],
    base: Base | None,
    version: int = VERSION,
) -> Manifest:
    kind: Kind = "full" if base is None else "delta"
    target = Path(path)
    chosen = _check_selection(selection)
    try:
        # filename="" keeps the temp file's name out of the header (reproducible bytes).
        with (
            atomic_file(target, label="snapshot ") as raw,
            gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=COMPRESSLEVEL, mtime=0
            ) as gz,
            BackgroundWriter(gz) as packer,
        ):
            manifest = _write_lines(packer, kind, docs, chosen, base, version)
    except OutputError as exc:
        raise SnapshotError(exc.message, hint=exc.hint) from exc
    return manifest


@dataclass(frozen=True, slots=True)
class Base:
    """What a delta is made against: its entries sorted by name (streamed), and its root."""

    entries: Iterable[tuple[str, str, str]]
    root: str

    @classmethod
    def of(cls, base: Manifest | Mapping[str, tuple[str, str]]) -> Base:
        """A full manifest (with its entries) or a state, as a Base."""
        state = base.state() if isinstance(base, Manifest) else base
        return cls(sorted((n, c, m) for n, (c, m) in state.items()), state_root(state))


class _Entries:
    """Entries as written: v1 keeps them for the manifest line, v2 writes a line per block."""

    def __init__(self, gz: BackgroundWriter, version: int) -> None:
        self.gz = gz
        self.version = version
        self.kept: list[Entry] = []
        self.count = 0

    def add(self, entry: Entry, line: object) -> None:
        self.gz.write(_line(line))
        self.kept.append(entry)
        self.count += 1
        if self.version > 1 and len(self.kept) == ENTRY_BLOCK:
            self.flush()

    def flush(self) -> None:
        if self.version > 1 and self.kept:
            self.gz.write(_line({"entries": [e.to_json() for e in self.kept]}))
            self.kept = []


def _write_lines(
    gz: BackgroundWriter,
    kind: Kind,
    docs: Iterable[Document],
    selection: dict[str, Any],
    base: Base | None,
    version: int,
) -> Manifest:
    if version not in VERSIONS:
        raise ValueError(f"snapshot format version {version} is not one of {VERSIONS}")
    root = RootHasher()
    out = _Entries(gz, version)
    # The base streams beside the documents (both sorted by name): a name the base has and
    # the documents lack is a tombstone, a name in both with the same hashes is left out.
    gone: Iterator[tuple[str, str, str]] = iter(base.entries if base is not None else ())
    next_gone = next(gone, None)
    last: str | None = None
    for doc in docs:
        content, metadata = document_hashes(doc)
        root.add(doc.name, content, metadata)
        same = False
        # Tombstones for base names that sort before this document keep the lines in order.
        while next_gone is not None and next_gone[0] <= doc.name:
            if next_gone[0] != doc.name:
                _check_sorted(next_gone[0], last)
                out.add(Entry(next_gone[0]), {"tombstone": next_gone[0]})
                last = next_gone[0]
            else:
                same = next_gone[1:] == (content, metadata)
            next_gone = next(gone, None)
        if same:
            continue
        out.add(Entry(doc.name, content, metadata), {"document": _api(doc)})
        last = doc.name
    while next_gone is not None:
        _check_sorted(next_gone[0], last)
        out.add(Entry(next_gone[0]), {"tombstone": next_gone[0]})
        last = next_gone[0]
        next_gone = next(gone, None)
    out.flush()
    base_root = base.root if base is not None else None
    listed = tuple(out.kept) if version == 1 else ()
    manifest = Manifest(
        kind,
        listed,
        root.hexdigest(),
        base_root,
        selection,
        version,
        None if version == 1 else out.count,
    )
    gz.write(_line({"manifest": manifest.to_json()}))
    return manifest


def _check_sorted(name: str, last: str | None) -> None:
    if last is not None and name <= last:
        raise SnapshotError(
            f"the base's entries must come sorted by name without repeats: {name} came after "
            f"{last}",
            names=[name],
            hint="this is a bug in the caller: sort the base's entries by name",
        )


def write_full(
    path: str | os.PathLike[str],
    docs: Iterable[Document],
    selection: Mapping[str, Any],
    *,
    version: int = VERSION,
) -> Manifest:
    """Write a full snapshot of `docs` (sorted by name, with content) atomically to `path`
    (`version`: the file format; older readers need 1)."""
    return _write(path, docs, selection, None, version)


def write_delta(
    path: str | os.PathLike[str],
    base: Manifest | Mapping[str, tuple[str, str]] | Base,
    docs_now: Iterable[Document],
    selection: Mapping[str, Any],
    *,
    version: int = VERSION,
) -> Manifest:
    """Write what changed from `base` (a full manifest, a state, or a streamed Base) to
    `docs_now` (sorted)."""
    return _write(
        path, docs_now, selection, base if isinstance(base, Base) else Base.of(base), version
    )
