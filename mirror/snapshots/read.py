"""Reading snapshot files: stream, parse and verify every line and hash, naming bad documents."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..canonical import canonical_json, sha256_tag
from ..config import DEFAULT_MAX_DOCUMENT_BYTES, ENV_MAX_DOCUMENT_BYTES
from ..errors import MirrorError
from ..lines import Line, LineReader, blocks
from ..models import Document
from .checks import Bad, check_entries, check_name, entry_from_json, manifest_from_json
from .format import (
    ENTRY_BLOCK,
    SHOWN,
    Entry,
    Manifest,
    RootHasher,
    Snapshot,
    SnapshotError,
    state_root,
)


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


# A v1 manifest line lists every entry, and a v2 `entries` line those since the one before, so
# both may grow with the lines before them: this much per line read since the last `entries`
# line (a 500-character name in escaped UTF-8 plus two tagged digests) on top of a fixed
# allowance.
MANIFEST_BASE = 1 << 16
MANIFEST_PER_ENTRY = 2304
# Problems recorded one by one; past this they are only counted (a hostile file can hold
# millions of bad lines, and a report that big helps nobody).
MAX_PROBLEMS = 1000


def _reject_constant(text: str) -> object:
    raise ValueError(f"{text} is not JSON")


# One decoder for every line: json.loads with options builds a new decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


class _Scan:
    """Reads a snapshot once, recording every problem instead of stopping at the first.

    `keep`: hold the documents and entries (read()); else only what is needed to check the
    file: the lines since the last `entries` line (v2; a v1 file lists them all at the end).
    """

    def __init__(self, keep: bool, limit: int) -> None:
        self.keep = keep
        self.limit = limit
        self.problems: list[str] = []
        self.unlisted = 0  # problems past MAX_PROBLEMS, counted only
        self.bad: set[str] = set()
        # Entries of the lines since the last `entries` line (all of them in a v1 file).
        self.found: dict[str, Entry] = {}
        self.documents: list[Document] = []
        self.manifest: Manifest | None = None
        self.last: str | None = None
        # v2: entries listed so far, the last listed name, the root over them, kept entries.
        self.blocks = 0
        self.listed = 0
        self.last_listed: str | None = None
        self.root = RootHasher()
        self.tombstoned = False
        self.entries: list[Entry] = []
        # What a streaming reader takes after each line: documents and tombstone names
        # (`stream`), or entries as listed (`stream_entries`).
        self.out: list[Document | str | Entry] = []
        self.stream = False
        self.stream_entries = False

    def problem(self, text: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(text)
        else:
            self.unlisted += 1

    def run(self, path: Path) -> None:
        """Scan the whole file, recording problems (at most MAX_PROBLEMS, then a count)."""
        for _ in self.scan(path):
            pass
        if self.unlisted:
            self.problems.append(f"... and {self.unlisted} more problem(s) not listed")

    def scan(self, path: Path) -> Iterator[Document | str | Entry]:
        """Scan the file; when `stream` is set, yield its documents and tombstone names as
        they are read (checked line by line; the whole file is judged only at the end)."""
        try:
            f = open(path, "rb")  # noqa: SIM115 -- closed by the `with` below
        except OSError as exc:
            raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror or exc}") from exc
        manifest_obj: object = None
        lineno = 0
        # Snapshot lines are never blank: runs of newlines are skipped cheaply and reported once.
        reader = LineReader(
            blocks(f, compressed=True, one_member=True),
            limit=self.limit,
            skip=rb"\n*",
            wide_prefix=(b'{"manifest":', b'{"entries":'),
            wide_limit=MANIFEST_BASE,
        )
        try:
            with f:
                for item in reader:
                    lineno = item.number
                    if manifest_obj is not None:
                        self.problem(f"line {lineno}: a line after the manifest")
                        manifest_obj = None
                    if item.too_long:
                        self.too_long(item)
                        continue
                    if not item.ended:
                        self.problem(f"line {lineno}: incomplete line: file truncated?")
                        break
                    try:
                        manifest_obj = self.line(lineno, item.data)
                    except Bad as exc:
                        self.problem(f"line {lineno}: {exc}")
                    reader.wide_limit = MANIFEST_BASE + MANIFEST_PER_ENTRY * len(self.found)
                    if self.out:
                        yield from self.out
                        self.out.clear()
        except (OSError, EOFError, zlib.error) as exc:
            self.problem(f"truncated or corrupt gzip stream ({exc})")
        if reader.blank_lines:
            self.problem(
                f"{reader.blank_lines} blank line(s), the first at line {reader.first_blank}"
            )
        if manifest_obj is None:
            self.problem("no manifest: file truncated?")
            return
        try:
            self.manifest = manifest_from_json(manifest_obj)
        except Bad as exc:
            self.problem(f"line {lineno}: manifest: {exc}")
            return
        if self.manifest.version == 1:
            if self.stream_entries:  # a v1 file lists its entries only here, at the end
                yield from self.manifest.entries
            if self.blocks:
                self.problem(f"line {lineno}: an `entries` line in a version 1 snapshot")
            self.compare(self.manifest.entries)
            manifest = self.manifest
            if manifest.kind == "full" and state_root(manifest.state()) != manifest.root:
                self.problem("the manifest's root digest does not match its entries")
        else:
            self.finish(self.manifest)

    def too_long(self, item: Line) -> None:
        """Record a line over the limit, naming its document when its name could be read."""
        size = f"{item.length} bytes" if item.ended else f"more than {item.length} bytes"
        what = "a line"
        if item.name is not None:
            what = f"document {item.name[:200]!r}"
            self.bad.add(item.name)
        self.problem(
            f"line {item.number}: {what} is {size}, over the limit of {self.limit} bytes "
            f"(--max-document-bytes / {ENV_MAX_DOCUMENT_BYTES})"
            + ("" if item.ended else "; reading stopped there")
        )

    def line(self, lineno: int, raw: bytes) -> object:
        """Check one line; return the manifest object if this is the manifest line."""
        try:
            text = raw.decode("utf-8")
            obj = _DECODER.decode(text)
        except UnicodeDecodeError as exc:
            raise Bad(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        except ValueError as exc:
            raise Bad(f"not valid JSON ({exc})") from None
        if not isinstance(obj, dict) or len(obj) != 1:
            raise Bad("not an object with exactly one key")
        ((key, value),) = obj.items()
        # Document lines are checked through their hashes (content bytes and canonical
        # metadata), which is what a snapshot pins; re-encoding every document just to compare
        # spellings would double the cost of verify. Small lines must be canonical too.
        if key != "document" and canonical_json(obj) != text:
            raise Bad("not canonical JSON (was the file edited by hand?)")
        if key == "manifest":
            return value
        if key == "entries":
            self.block(value)
        elif key == "tombstone" and isinstance(value, str):
            self.check_name(value)
            self.seen(value, Entry(value))
            if self.stream:
                self.out.append(value)
        elif key == "document":
            try:
                doc = Document.from_api(value)
            except MirrorError as exc:
                raise Bad(f"not a Document: {exc.message}") from None
            self.check_name(doc.name)
            content = value.get("content")
            if not isinstance(content, str) or "view" in value:
                raise Bad(f"{doc.name}: the document is not in the form dk-mirror writes")
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
            if self.stream:
                self.out.append(doc)
        else:
            raise Bad(f"unknown line type {key!r}")
        return None

    def block(self, value: object) -> None:
        """A v2 `entries` line: the entries of the lines since the one before, compared."""
        self.blocks += 1
        if not isinstance(value, list) or not 0 < len(value) <= ENTRY_BLOCK:
            self.fault_all(f"not a list of 1 to {ENTRY_BLOCK} entries")
            raise Bad(f"an `entries` line is not a list of 1 to {ENTRY_BLOCK} entries")
        try:
            entries = tuple(entry_from_json(e) for e in value)
            check_entries(entries, self.last_listed)
        except (Bad, KeyError, TypeError, AttributeError) as exc:
            self.fault_all("its `entries` line is malformed")
            raise Bad(f"malformed `entries` line ({exc})") from None
        self.compare(entries)
        if self.stream_entries:
            self.out.extend(entries)
        for e in entries:
            if e.removed:
                self.tombstoned = True
            else:
                self.root.add(e.name, str(e.content), str(e.metadata))
        self.listed += len(entries)
        self.last_listed = entries[-1].name
        if self.keep:
            self.entries.extend(entries)
        self.found.clear()

    def fault_all(self, problem: str) -> None:
        """The lines since the last `entries` line cannot be checked: name their documents."""
        for name in self.found:
            self.fault(name, problem)
        self.found.clear()

    def finish(self, manifest: Manifest) -> None:
        """The end of a v2 file: every line listed, the count and (full) the root."""
        for name in sorted(self.found):
            self.fault(name, "in the file but not in the manifest")
        if manifest.count != self.listed:
            self.problem(f"count is {manifest.count} but there are {self.listed} entries")
        if manifest.kind == "full":
            if self.tombstoned:
                self.problem("a full snapshot has neither a base nor tombstones")
            elif self.root.hexdigest() != manifest.root:
                self.problem("the manifest's root digest does not match its entries")
        if self.keep:
            self.manifest = Manifest(
                manifest.kind,
                tuple(self.entries),
                manifest.root,
                manifest.base,
                manifest.selection,
                manifest.version,
                manifest.count,
            )

    def check_name(self, name: str) -> None:
        try:
            check_name(name)
        except Bad:
            self.bad.add(name)
            raise

    def seen(self, name: str, entry: Entry) -> None:
        if self.last is not None and name <= self.last:
            self.bad.add(name)
            raise Bad(f"{name} is out of order or repeated (names must be sorted and unique)")
        self.last = name
        self.found[name] = entry

    def compare(self, entries: tuple[Entry, ...]) -> None:
        """Check the lines read (`found`) against the entries that list them."""
        listed = {e.name for e in entries}
        for want in entries:
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

    def fault(self, name: str, problem: str) -> None:
        self.bad.add(name)
        self.problem(f"{name}: {problem}")


def verify(
    path: str | os.PathLike[str], *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> VerifyReport:
    """Check a snapshot, naming every failing document; raises only if it cannot be opened."""
    scan = _Scan(keep=False, limit=max_document_bytes)
    scan.run(Path(path))
    return VerifyReport(str(path), tuple(scan.problems), tuple(sorted(scan.bad)), scan.manifest)


def _failed(scan: _Scan, path: str | os.PathLike[str]) -> SnapshotError:
    shown = "; ".join(scan.problems[:SHOWN])
    more = f" (and {len(scan.problems) - SHOWN} more)" if len(scan.problems) > SHOWN else ""
    return SnapshotError(
        f"snapshot {path} failed verification: {shown}{more}",
        names=sorted(scan.bad),
        hint="the file was damaged or changed after it was written: copy or export it again",
    )


def read(
    path: str | os.PathLike[str], *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> Snapshot:
    """Read and fully verify a snapshot; SnapshotError (naming the documents) if anything is off.

    Holds every document: for whole-store work use `checked` then `changes` or `entries`.
    """
    scan = _Scan(keep=True, limit=max_document_bytes)
    scan.run(Path(path))
    if scan.problems or scan.manifest is None:
        raise _failed(scan, path)
    tombstones = [e.name for e in scan.manifest.entries if e.removed]
    return Snapshot(scan.manifest, scan.documents, tombstones)


def checked(
    path: str | os.PathLike[str], *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> Manifest:
    """Verify a snapshot in bounded memory (v2) and return its manifest (without entries);
    SnapshotError naming the documents if anything is off."""
    scan = _Scan(keep=False, limit=max_document_bytes)
    scan.run(Path(path))
    if scan.problems or scan.manifest is None:
        raise _failed(scan, path)
    return scan.manifest


def _again(
    path: str | os.PathLike[str], expect: Manifest, max_document_bytes: int, entries: bool
) -> Iterator[Document | str | Entry]:
    scan = _Scan(keep=False, limit=max_document_bytes)
    scan.stream, scan.stream_entries = not entries, entries
    yield from scan.scan(Path(path))
    if scan.unlisted:
        scan.problems.append(f"... and {scan.unlisted} more problem(s) not listed")
    if scan.problems or scan.manifest is None:
        raise _failed(scan, path)
    if (scan.manifest, scan.manifest.count) != (expect, expect.count):
        raise SnapshotError(
            f"snapshot {path} changed while it was read (its manifest is not the one verified)",
            hint="leave the file alone while dk-mirror reads it, then run the command again",
        )


def changes(
    path: str | os.PathLike[str],
    expect: Manifest,
    *,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> Iterator[Document | str]:
    """The documents and tombstone names of a snapshot `checked` before (as `expect`), in file
    order, streamed and checked again as they are read: SnapshotError at the end if the file
    no longer verifies, so a consumer writing them in one transaction rolls back."""
    for item in _again(path, expect, max_document_bytes, entries=False):
        if not isinstance(item, Entry):
            yield item


def entries(
    path: str | os.PathLike[str],
    expect: Manifest,
    *,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> Iterator[Entry]:
    """The manifest entries of a snapshot `checked` before, sorted by name, streamed (a v1
    file's come at its end); SnapshotError at the end if the file no longer verifies."""
    for item in _again(path, expect, max_document_bytes, entries=True):
        if isinstance(item, Entry):
            yield item
