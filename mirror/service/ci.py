"""Reproducible-CI use cases: export/import/check snapshots, lock and sync.

The file formats are in snapshot.py, snapshot_diff.py and lockfile.py (pure); this module
connects them to the store and the upstream. Markdown trees and the other exports for readers
are mirror/exports/.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import limits
from .. import names as naming
from ..errors import InvalidInput, NotCached
from ..exports.source import from_history, locked_versions
from ..files import write_atomic
from ..models import Document, View, rfc3339
from ..snapshots import format as snapshot
from ..snapshots import lockfile
from ..snapshots import read as snapshot_read
from ..snapshots.age import snapshot_written_at
from ..snapshots.diff import check_base, check_result, delta_roots
from ..snapshots.read import read as read_snapshot
from ..timestamps import instant_key
from . import documents, search
from .context import Context

if TYPE_CHECKING:
    from ..snapshots.lockcheck import LockDrift


@dataclass(slots=True)
class ImportReport:
    """What a snapshot import changed (`already`: the store held it all, nothing was written)."""

    kind: str
    written: int
    removed: int
    root: str
    already: bool = False

    def to_json(self) -> dict[str, Any]:
        """As `snapshot import --json` prints it."""
        return {
            "kind": self.kind,
            "written": self.written,
            "removed": self.removed,
            "root": self.root,
            "alreadyApplied": self.already,
        }


@dataclass(slots=True)
class CheckReport:
    """Which pinned documents changed upstream since the snapshot, and how old it is.

    `age_seconds` is the snapshot's age, from its last git commit or else its mtime
    (`written_by` says which: the format holds no wall clock, so the same documents give the
    same bytes); `content_as_of` is the newest
    pinned `updateTime`, which says how recent the pinned content is, not the file.
    """

    pinned: int
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    age_seconds: float | None = None
    written_at: float | None = None
    written_by: str | None = None
    content_as_of: str | None = None
    too_old: bool = False

    @property
    def ok(self) -> bool:
        """True when nothing changed upstream and the snapshot is young enough."""
        return not (self.changed or self.removed or self.too_old)

    def to_json(self) -> dict[str, Any]:
        """As `snapshot check --json` prints it."""
        return {
            "pinned": self.pinned,
            "changed": self.changed,
            "removed": self.removed,
            "ageSeconds": self.age_seconds,
            "writtenAt": rfc3339(self.written_at),
            "writtenAtSource": self.written_by,
            "contentAsOf": self.content_as_of,
            "tooOld": self.too_old,
            "ok": self.ok,
        }


def _selection(
    prefix: str | None, data_source: str | None, names: Sequence[str] | None
) -> dict[str, object]:
    # Only what was asked, never when or where: the selection is part of the bytes.
    out: dict[str, object] = {}
    if prefix:
        out["prefix"] = prefix
    if data_source:
        out["dataSource"] = data_source
    if names is not None:
        out["names"] = len(set(names))
    return out


def export(
    ctx: Context,
    out: Path,
    *,
    prefix: str | None = None,
    data_source: str | None = None,
    names: Sequence[str] | None = None,
    lock: Path | None = None,
    since: Path | None = None,
) -> snapshot.Manifest:
    """Write a full (or, with `since`, delta) snapshot of the selected documents.

    A delta given no selection of its own takes its base's (prefix, data source, or the
    base's documents when it was made from names or a lock): the delta of `docs.snap
    --prefix X` is then what changed under X, not every other document of the store."""
    store = ctx.store
    limit = ctx.settings.max_document_bytes
    base: snapshot.Manifest | None = None
    inherited = False
    if since is not None:
        base = snapshot_read.checked(since, max_document_bytes=limit)
        if base.kind != "full":
            raise snapshot.SnapshotError(
                f"{since} is a delta; a delta is made against a full snapshot",
                hint="pass the full snapshot the deltas start from",
            )
        if prefix is None and data_source is None and names is None and lock is None:
            chosen = base.selection
            prefix, data_source = chosen.get("prefix"), chosen.get("dataSource")
            if "names" in chosen:
                # A base document gone from the store is a tombstone here, not an error.
                listed = snapshot_read.entries(since, base, max_document_bytes=limit)
                names = [e.name for e in listed]
                inherited = True
    pinned: dict[str, Document] = {}
    if lock is not None:
        names, pinned = locked_versions(store, lock)
    if names is not None and not inherited:
        present = {d.name for d in store.iter_documents(names=names)}
        missing = sorted(set(names) - present)
        if missing:
            raise snapshot.SnapshotError(
                f"{len(missing)} selected document(s) have no content in the store: "
                + ", ".join(missing[:10]),
                names=missing,
                hint="fetch them first (dk-mirror fetch NAME...) or drop them from the selection",
            )
    docs = store.iter_documents(prefix=prefix, data_source=data_source, names=names)
    if pinned:
        docs = (pinned.get(d.name, d) for d in docs)
    selection = _selection(prefix, data_source, names)
    if since is None or base is None:
        return snapshot.write_full(out, docs, selection)
    # The base's entries stream beside the store's documents (both by name): bounded memory.
    listed = snapshot_read.entries(since, base, max_document_bytes=limit)
    base_entries = ((e.name, str(e.content), str(e.metadata)) for e in listed)
    return snapshot.write_delta(out, snapshot.Base(base_entries, base.root), docs, selection)


def store_entries(ctx: Context) -> Iterator[tuple[str, str, str]]:
    """(name, content hash, metadata hash) of every document with content, by name, streamed."""
    for doc in ctx.store.iter_documents():
        yield (doc.name, *snapshot.document_hashes(doc))


def import_snapshot(ctx: Context, path: Path) -> ImportReport:
    """Verify a snapshot completely, then write it in one transaction (all or nothing).

    A delta the store already matches (its root equals the store's) is a no-op, so a CI
    step that re-imports it succeeds without writing anything. Streamed throughout: the file
    is verified in one pass, (a delta) checked against the store in another, and written in a
    third that verifies it again and rolls everything back if it changed meanwhile.
    """
    limit = ctx.settings.max_document_bytes
    # Raises, naming every bad document, before anything is written.
    manifest = snapshot_read.checked(path, max_document_bytes=limit)
    if manifest.kind == "delta":
        listed = snapshot_read.entries(path, manifest, max_document_bytes=limit)
        before, after = delta_roots(store_entries(ctx), listed)
        if before == manifest.root:
            return ImportReport(manifest.kind, 0, 0, manifest.root, already=True)
        check_base(manifest, before)  # refuses a delta made on another base
        check_result(manifest, after)
    written, removed = ctx.store.apply_stream(
        snapshot_read.changes(path, manifest, max_document_bytes=limit),
        fetched_at=ctx.clock(),
        upstream=f"snapshot {path.name}",
    )
    return ImportReport(manifest.kind, written, removed, manifest.root)


def check(ctx: Context, path: Path, *, max_age: float | None) -> CheckReport:
    """Ask upstream (BASIC view: metadata only) which pinned documents changed or vanished."""
    from ..upstream.batching import iter_fetch

    snap = read_snapshot(path)
    pinned = {d.name: d for d in snap.documents}
    report = CheckReport(pinned=len(pinned))
    for outcome in iter_fetch(ctx.upstream(), sorted(pinned), View.BASIC):
        report.removed.extend(outcome.missing)
        for now in outcome.documents:
            if _changed(pinned[now.name], now):
                report.changed.append(now.name)
    # The format keeps wall-clock time out of the bytes on purpose (same documents, same
    # bytes): the time it was written is its commit time, or its mtime outside git.
    written = snapshot_written_at(path)
    report.written_at, report.written_by = written.timestamp, written.source
    report.age_seconds = max(0.0, ctx.clock() - report.written_at)
    report.content_as_of = _newest_update(snap.documents)
    report.too_old = max_age is not None and report.age_seconds > max_age
    return report


def _changed(pinned: Document, now: Document) -> bool:
    newer = instant_key(now.update_time or "") or ""
    was = instant_key(pinned.update_time or "") or ""
    if newer and was and newer > was:
        return True
    length = pinned.content_length_bytes
    return length is not None and now.content_length_bytes not in (None, length)


def _newest_update(docs: Iterable[Document]) -> str | None:
    """The latest `updateTime` among `docs`, as written (None when none has one)."""
    keyed = [(k, d.update_time) for d in docs if (k := instant_key(d.update_time or ""))]
    return max(keyed)[1] if keyed else None


def lock(ctx: Context, requirements: Path, output: Path | None) -> list[lockfile.LockEntry]:
    """Resolve a requirements file into lock entries (fetching what the store lacks), and
    write them to `output` atomically when given."""
    needs = lockfile.read_requirements(requirements)
    names: list[str] = list(needs.names)
    for prefix in needs.prefixes:
        if not ctx.settings.offline:
            # The API cannot list a prefix: discover what lies under it by crawling.
            discover_prefix(ctx, prefix)
        found = [s.name for s in documents.list_documents(ctx, prefix, None) if s.has_content]
        if not found:
            raise InvalidInput(
                f"{requirements}: no cached document starts with {prefix}",
                hint="fetch the documents under that prefix first (online, `dk-mirror lock` "
                "crawls it), or remove the prefix",
            )
        names.extend(found)
    for spec in needs.searches:
        request = search.make_request(spec.query, spec.limit, None, spec.filter)
        result = search.search(ctx, request, ctx.default_mode(), fetch=False)
        names.extend(r.parent for r in result.page.results)
    names = list(dict.fromkeys(names))
    if not ctx.settings.offline:
        report = documents.fetch(ctx, names, ctx.default_mode())
        if report.error:
            raise report.error
    cached = ctx.store.get_many(names)
    absent = [n for n in names if n not in cached or cached[n].document.content is None]
    if absent:
        raise InvalidInput(
            f"{len(absent)} required document(s) are not in the store: " + ", ".join(absent[:10]),
            hint="go online (or import a snapshot) so `dk-mirror lock` can fetch them",
        )
    entries = sorted(lockfile.LockEntry.from_document(cached[n].document) for n in names)
    if output is not None:
        # The lock records what it was made from, so `lock --check` needs no network.
        write_atomic(output, lockfile.write_lock(entries, made_from=needs))
    return entries


# Result pages (100 chunks each) a prefix's discovery search reads: a few calls of the
# Search quota (100/min) reach pages no link leads to.
PREFIX_SEARCH_PAGES = 5


def discover_prefix(ctx: Context, prefix: str) -> None:
    """Crawl what lies under `prefix`: its own page, a search restricted to its site (words
    of its path as the query), and every page they link to inside the prefix."""
    from .crawl import crawl, make_spec
    from .crawl_reports import CrawlOptions

    canonical = documents.prefix_form(prefix)
    page = canonical.rstrip("/")
    host, _, path = page.removeprefix(naming.PREFIX).partition("/")
    words = " ".join(w for w in re.split(r"[/_.-]+", path) if w) or host
    spec = make_spec(
        [page] if path else [],
        prefixes=[canonical],
        searches=[words[: limits.MAX_TEXT]],
        filter=f'data_source = "{host}"',
        search_pages=PREFIX_SEARCH_PAGES,
    )
    report = crawl(ctx, spec, CrawlOptions(mode=ctx.default_mode()))
    if report.error is not None and (report.failed or report.stopped):
        raise report.error


def check_lock(requirements: Path, lock_path: Path) -> LockDrift:
    """How a lock differs from its requirements file (no store, no network)."""
    from ..snapshots.lockcheck import compare

    return compare(lockfile.read_requirements(requirements), lockfile.read_lock_path(lock_path))


@dataclass(slots=True)
class SyncReport:
    """What `sync --locked` did: documents already right, written, and mismatches."""

    locked: int
    already: int = 0
    written: int = 0
    mismatches: list[lockfile.Mismatch] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As `sync --json` prints it: the documents that differ, by name, for CI scripts."""
        return {
            "locked": self.locked,
            "already": self.already,
            "written": self.written,
            "ok": not self.mismatches,
            "mismatches": [m.to_json() for m in self.mismatches],
        }


def sync_locked(ctx: Context, lock_path: Path, *, source: Path | None) -> SyncReport:
    """Make the store hold exactly the locked bytes, from the store, a snapshot or upstream."""
    entries = lockfile.read_lock_file(lock_path)
    wanted = {e.name: e for e in entries}
    cached = ctx.store.get_many(list(wanted))
    have = {n: c.sha256 for n, c in cached.items()}
    todo = {m.name for m in lockfile.check_locked(entries, have)}
    report = SyncReport(locked=len(entries), already=len(entries) - len(todo))
    # The store's own history first: a lock pinning an older version restores it offline.
    candidates = from_history(ctx.store, [wanted[n] for n in sorted(todo)])
    found_in: dict[str, str] = {}  # where a document not in the store was found
    if todo - candidates.keys() and source is not None:
        snap = read_snapshot(source)
        for doc in snap.documents:
            if doc.name in todo and doc.name not in candidates:
                candidates[doc.name] = doc
                found_in[doc.name] = f"snapshot {source.name}"
    remaining = sorted(todo - candidates.keys())
    if remaining and ctx.settings.offline and source is None and not have.keys() & remaining:
        # A store without them and nothing to take them from (a fresh CI store, say): one
        # error saying what to give, not one per document.
        raise NotCached(
            remaining,
            hint="give the snapshot made with the lock: `dk-mirror sync --locked --from "
            "docs.snap` (it works with --strict-offline), or go online to fetch them",
        )
    if remaining and not ctx.settings.offline:
        from ..upstream.batching import iter_fetch

        for outcome in iter_fetch(ctx.upstream(), remaining):
            candidates.update((d.name, d.with_derived_fields()) for d in outcome.documents)
        found_in.update((name, "upstream") for name in remaining)
    for name in list(found_in):
        if name not in candidates or have.get(name) is not None:
            del found_in[name]  # a mismatch then names the store's copy, as before
    good = [d for n, d in sorted(candidates.items()) if _matches(d, wanted[n])]
    have.update({d.name: lockfile.LockEntry.from_document(d).sha256 for d in good})
    report.mismatches = [
        _found_elsewhere(m, candidates, found_in) for m in lockfile.check_locked(entries, have)
    ]
    if report.mismatches:
        # Nothing is written unless every locked document can be made exact.
        return report
    ctx.store.apply_stream(good, fetched_at=ctx.clock(), upstream="sync --locked")
    report.written = len(good)
    return report


def _found_elsewhere(
    mismatch: lockfile.Mismatch, candidates: dict[str, Document], found_in: dict[str, str]
) -> lockfile.Mismatch:
    """A document the store lacks but a snapshot or upstream holds with other bytes: say so,
    rather than "not in the store" (a lock or snapshot edited by hand, or from another run)."""
    if mismatch.reason != "missing" or mismatch.name not in found_in:
        return mismatch
    actual = lockfile.LockEntry.from_document(candidates[mismatch.name]).sha256
    return replace(mismatch, reason="differs", actual=actual, found_in=found_in[mismatch.name])


def _matches(doc: Document, entry: lockfile.LockEntry) -> bool:
    return doc.content is not None and lockfile.LockEntry.from_document(doc).sha256 == entry.sha256
