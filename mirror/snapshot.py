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

import contextlib
import gzip
import hashlib
import json
import os
import re
import secrets
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .canonical import canonical_json, sha256_tag
from .errors import InvalidInput, MirrorError
from .models import Document

FORMAT = "dk-mirror-snapshot"
VERSION = 1
# Fixed so the same documents give the same bytes; level 9 because snapshots are archived.
COMPRESSLEVEL = 9
Kind = Literal["full", "delta"]
State = dict[str, tuple[str, str]]
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
# How many problems an exception message shows; VerifyReport keeps them all.
_SHOWN = 10


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


def _open_temp(target: Path) -> tuple[Path, int]:
    # Same folder so os.replace is an atomic rename; a random name so concurrent exports to one
    # folder never share a temp file; os.open (not mkstemp) so the umask sets the permissions.
    for _ in range(10):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return tmp, os.open(tmp, flags, 0o666)
        except FileExistsError:
            continue
    raise SnapshotError(f"cannot create a temporary file beside {target}")


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
        tmp, fd = _open_temp(target)
    except OSError as exc:
        raise SnapshotError(f"cannot write snapshot {target}: {exc.strerror or exc}") from exc
    try:
        with open(fd, "wb") as raw:
            # filename="" keeps the temp file's name out of the header (reproducible bytes).
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, compresslevel=COMPRESSLEVEL, mtime=0
            ) as gz:
                manifest = _write_lines(gz, kind, docs, chosen, base)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        # Never leave a partial file behind, whatever stopped us (even Ctrl-C).
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise SnapshotError(f"cannot write snapshot {target}: {exc}") from exc
        raise
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


# --- reading and verifying ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """Everything wrong with a snapshot file; `bad_names` are the documents at fault."""

    path: str
    problems: tuple[str, ...]
    bad_names: tuple[str, ...]
    manifest: Manifest | None

    @property
    def ok(self) -> bool:
        """True when the file is intact and self-consistent."""
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        """A stable JSON summary for `--json` output."""
        m = self.manifest
        return {
            "path": self.path,
            "ok": self.ok,
            "kind": m.kind if m else None,
            "count": m.count if m else None,
            "root": m.root if m else None,
            "base": m.base if m else None,
            "problems": list(self.problems),
            "badNames": list(self.bad_names),
        }


class _Bad(Exception):
    """One structural problem, raised inside the scanner and recorded there."""


def _manifest_from_json(obj: object) -> Manifest:
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise _Bad("not a dk-mirror snapshot manifest")
    if obj.get("version") != VERSION:
        raise _Bad(f"format version {obj.get('version')!r} is not {VERSION} (a newer dk-mirror?)")
    try:
        entries = tuple(
            Entry(e["name"], e.get("content"), e.get("metadata")) for e in obj["entries"]
        )
        manifest = Manifest(obj["kind"], entries, obj["root"], obj["base"], obj["selection"])
        rebuilt = manifest.to_json()
    except (KeyError, TypeError, AttributeError) as exc:
        raise _Bad(f"malformed manifest ({exc!r})") from None
    if obj.get("count") != len(entries):
        raise _Bad(f"count is {obj.get('count')!r} but there are {len(entries)} entries")
    # Rebuilding and comparing catches stray keys and wrong types without a check for each.
    if rebuilt != obj or manifest.kind not in ("full", "delta"):
        raise _Bad("malformed manifest: its keys or entries are not the ones dk-mirror writes")
    names = [e.name for e in entries]
    if any(not isinstance(n, str) for n in names) or names != sorted(set(names)):
        raise _Bad("manifest entries are not sorted by name and unique")
    full = manifest.kind == "full"
    if full and (manifest.base is not None or any(e.removed for e in entries)):
        raise _Bad("a full snapshot has neither a base nor tombstones")
    digests = [manifest.root, *([] if full else [manifest.base])]
    digests += [h for e in entries if not e.removed for h in (e.content, e.metadata)]
    for digest in digests:
        if not isinstance(digest, str) or not _HASH.match(digest):
            raise _Bad(f"{str(digest)[:80]!r} is not a sha256:<64 lower-case hex> digest")
    return manifest


def _reject_constant(text: str) -> object:
    raise ValueError(f"{text} is not JSON")


def _gunzip_lines(f: Any) -> Iterator[bytes]:
    """Lines of a gzip stream, decompressed in large blocks (GzipFile.readline is 3x slower).

    A truncated stream yields its last partial line without a newline and then raises EOFError,
    as GzipFile does; bytes after the gzip member are refused like GzipFile refuses them.
    """
    inflater = zlib.decompressobj(wbits=31)  # 31: expect a gzip header and trailer
    pending = b""
    while True:
        block = f.read(1 << 20)
        if not block:
            break
        pending += inflater.decompress(block)
        if inflater.unused_data:
            raise OSError("data after the end of the gzip stream")
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line + b"\n"
        if inflater.eof:
            break
    pending += inflater.flush()
    if pending:
        yield pending
    if not inflater.eof:
        raise EOFError("compressed file ended before the end-of-stream marker was reached")


# One decoder for every line: json.loads with options builds a new decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class _Scan:
    """Reads a snapshot once, recording every problem instead of stopping at the first."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.problems: list[str] = []
        self.bad: set[str] = set()
        self.found: dict[str, Entry] = {}
        self.documents: list[Document] = []
        self.manifest: Manifest | None = None
        self.last: str | None = None

    def run(self, path: Path) -> None:
        try:
            f = open(path, "rb")  # noqa: SIM115 -- closed by the GzipFile's `with` below
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from exc
        manifest_obj: object = None
        lineno = 0
        try:
            with f:
                for lineno, raw in enumerate(_gunzip_lines(f), start=1):
                    if manifest_obj is not None:
                        self.problems.append(f"line {lineno}: a line after the manifest")
                        manifest_obj = None
                    if not raw.endswith(b"\n"):
                        self.problems.append(f"line {lineno}: incomplete line: file truncated?")
                        break
                    try:
                        manifest_obj = self.line(lineno, raw[:-1])
                    except _Bad as exc:
                        self.problems.append(f"line {lineno}: {exc}")
        except (OSError, EOFError, zlib.error) as exc:
            self.problems.append(f"truncated or corrupt gzip stream ({exc})")
        if manifest_obj is None:
            self.problems.append("no manifest: file truncated?")
            return
        try:
            self.manifest = _manifest_from_json(manifest_obj)
        except _Bad as exc:
            self.problems.append(f"line {lineno}: manifest: {exc}")
            return
        self.compare(self.manifest)

    def line(self, lineno: int, raw: bytes) -> object:
        """Check one line; return the manifest object if this is the manifest line."""
        try:
            text = raw.decode("utf-8")
            obj = _DECODER.decode(text)
        except UnicodeDecodeError as exc:
            raise _Bad(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except ValueError as exc:
            raise _Bad(f"not valid JSON ({exc})") from None
        if not isinstance(obj, dict) or len(obj) != 1:
            raise _Bad("not an object with exactly one key")
        ((key, value),) = obj.items()
        # Document lines are checked through their hashes (content bytes and canonical
        # metadata), which is what a snapshot pins; re-encoding every document just to compare
        # spellings would double the cost of verify. Small lines must be canonical too.
        if key != "document" and canonical_json(obj) != text:
            raise _Bad("not canonical JSON (was the file edited by hand?)")
        if key == "manifest":
            return value
        if key == "tombstone" and isinstance(value, str):
            self.seen(value, Entry(value))
        elif key == "document":
            try:
                doc = Document.from_api(value)
            except MirrorError as exc:
                raise _Bad(f"not a Document: {exc.message}") from None
            content = value.get("content")
            if not isinstance(content, str) or "view" in value:
                raise _Bad(f"{doc.name}: the document is not in the form dk-mirror writes")
            # Hash the values as read (not a re-serialised Document): what the file holds is
            # what must match the manifest.
            meta = {k: v for k, v in value.items() if k != "content"}
            entry = Entry(
                doc.name,
                sha256_tag(content.encode("utf-8")),
                sha256_tag(canonical_json(meta).encode("utf-8")),
            )
            self.seen(doc.name, entry)
            if self.keep:
                self.documents.append(doc)
        else:
            raise _Bad(f"unknown line type {key!r}")
        return None

    def seen(self, name: str, entry: Entry) -> None:
        if self.last is not None and name <= self.last:
            self.bad.add(name)
            raise _Bad(f"{name} is out of order or repeated (names must be sorted and unique)")
        self.last = name
        self.found[name] = entry

    def compare(self, manifest: Manifest) -> None:
        listed = {e.name for e in manifest.entries}
        for want in manifest.entries:
            got = self.found.get(want.name)
            if got is None:
                self.fault(want.name, "listed in the manifest, but its line is missing or bad")
            elif got.removed != want.removed:
                self.fault(want.name, "a tombstone in one of the manifest and the file only")
            elif not want.removed:
                what = [k for k in ("content", "metadata") if getattr(got, k) != getattr(want, k)]
                if what:
                    self.fault(want.name, f"{' and '.join(what)} do(es) not match the manifest")
        for name in sorted(set(self.found) - listed):
            self.fault(name, "in the file but not in the manifest")
        if manifest.kind == "full" and state_root(manifest.state()) != manifest.root:
            self.problems.append("the manifest's root digest does not match its entries")

    def fault(self, name: str, problem: str) -> None:
        self.bad.add(name)
        self.problems.append(f"{name}: {problem}")


def verify(path: str | os.PathLike[str]) -> VerifyReport:
    """Check a snapshot, naming every failing document; raises only if it cannot be opened."""
    scan = _Scan(keep=False)
    scan.run(Path(path))
    return VerifyReport(str(path), tuple(scan.problems), tuple(sorted(scan.bad)), scan.manifest)


def read(path: str | os.PathLike[str]) -> Snapshot:
    """Read and fully verify a snapshot; SnapshotError (naming the documents) if anything is off."""
    scan = _Scan(keep=True)
    scan.run(Path(path))
    if scan.problems or scan.manifest is None:
        shown = "; ".join(scan.problems[:_SHOWN])
        more = f" (and {len(scan.problems) - _SHOWN} more)" if len(scan.problems) > _SHOWN else ""
        raise SnapshotError(
            f"snapshot {path} failed verification: {shown}{more}",
            names=sorted(scan.bad),
            hint="the file was damaged or changed after it was written: copy or export it again",
        )
    tombstones = [e.name for e in scan.manifest.entries if e.removed]
    return Snapshot(scan.manifest, scan.documents, tombstones)
