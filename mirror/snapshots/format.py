"""Snapshot files: a pinned, hash-verified set of documents for reproducible (offline) CI.

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
from ..errors import InvalidInput
from ..files import atomic_file
from ..models import Document

FORMAT = "dk-mirror-snapshot"
VERSION = 1
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


class _RootHasher:
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
    hasher = _RootHasher()
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
    entries: tuple[Entry, ...]
    root: str
    base: str | None = None
    selection: Mapping[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Number of entry lines (documents and tombstones)."""
        return len(self.entries)

    def to_json(self) -> dict[str, Any]:
        """The manifest object as written."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "kind": self.kind,
            "count": self.count,
            "entries": [e.to_json() for e in self.entries],
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
    base: State | None,
) -> Manifest:
    kind: Kind = "full" if base is None else "delta"
    target = Path(path)
    chosen = _check_selection(selection)
    try:
        # filename="" keeps the temp file's name out of the header (reproducible bytes).
        with (
            atomic_file(target) as raw,
            gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=COMPRESSLEVEL, mtime=0
            ) as gz,
        ):
            manifest = _write_lines(gz, kind, docs, chosen, base)
    except OSError as exc:
        raise SnapshotError(f"cannot write snapshot {target}: {exc.strerror or exc}") from exc
    return manifest


def _write_lines(
    gz: gzip.GzipFile,
    kind: Kind,
    docs: Iterable[Document],
    selection: dict[str, Any],
    base: State | None,
) -> Manifest:
    root = _RootHasher()
    entries: list[Entry] = []
    gone: Iterator[str] = iter(sorted(base or ()))
    next_gone = next(gone, None)
    for doc in docs:
        content, metadata = document_hashes(doc)
        root.add(doc.name, content, metadata)
        # Tombstones for base names that sort before this document keep the lines in order.
        while next_gone is not None and next_gone <= doc.name:
            if next_gone != doc.name:
                entries.append(Entry(next_gone))
                gz.write(_line({"tombstone": next_gone}))
            next_gone = next(gone, None)
        if base is not None and base.get(doc.name) == (content, metadata):
            continue
        entries.append(Entry(doc.name, content, metadata))
        gz.write(_line({"document": _api(doc)}))
    while next_gone is not None:
        entries.append(Entry(next_gone))
        gz.write(_line({"tombstone": next_gone}))
        next_gone = next(gone, None)
    base_root = state_root(base) if base is not None else None
    manifest = Manifest(kind, tuple(entries), root.hexdigest(), base_root, selection)
    gz.write(_line({"manifest": manifest.to_json()}))
    return manifest


def write_full(
    path: str | os.PathLike[str], docs: Iterable[Document], selection: Mapping[str, Any]
) -> Manifest:
    """Write a full snapshot of `docs` (sorted by name, with content) atomically to `path`."""
    return _write(path, docs, selection, None)


def write_delta(
    path: str | os.PathLike[str],
    base: Manifest | Mapping[str, tuple[str, str]],
    docs_now: Iterable[Document],
    selection: Mapping[str, Any],
) -> Manifest:
    """Write what changed from `base` (a full manifest or a state) to `docs_now` (sorted)."""
    return _write(
        path, docs_now, selection, base.state() if isinstance(base, Manifest) else dict(base)
    )
