"""Which documents an export holds, and the one function that reads them.

`read_documents` is the single seam between exports and the store: every format sees the
documents only through it (a reading "as of" a date plugs in here, nowhere else).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Document
from ..snapshots import lockfile
from ..snapshots.format import SnapshotError

if TYPE_CHECKING:
    from ..store.api import StoreAccess


@dataclass(frozen=True, slots=True)
class Selection:
    """The documents to export: all with content, those under `prefix`, or a lock's versions."""

    prefix: str | None = None
    lock: Path | None = None

    def to_json(self) -> dict[str, Any]:
        """What was asked (for `--json`); never when or where, so it is safe in any output."""
        out: dict[str, Any] = {}
        if self.prefix:
            out["prefix"] = self.prefix
        if self.lock is not None:
            out["lock"] = str(self.lock)
        return out


def read_documents(store: StoreAccess, selection: Selection) -> Iterator[Document]:
    """The selected documents with content, in name order, streamed."""
    if selection.lock is None:
        yield from store.iter_documents(prefix=selection.prefix)
        return
    names, pinned = locked_versions(store, selection.lock)
    for doc in store.iter_documents(prefix=selection.prefix, names=names):
        yield pinned.get(doc.name, doc)


def locked_versions(store: StoreAccess, lock: Path) -> tuple[list[str], dict[str, Document]]:
    """A lock's names, and the locked versions the store keeps only in its history (a refresh
    moved the document on); SnapshotError naming the documents whose locked bytes are gone."""
    entries = lockfile.read_lock_file(lock)
    names = [e.name for e in entries]
    cached = store.get_many(names)
    have: dict[str, str | None] = {n: c.sha256 for n, c in cached.items()}
    by_name = {e.name: e for e in entries}
    moved = [by_name[m.name] for m in lockfile.check_locked(entries, have)]
    pinned = from_history(store, moved)
    have.update((n, lockfile.LockEntry.from_document(d).sha256) for n, d in pinned.items())
    wrong = lockfile.check_locked(entries, have)
    if wrong:
        raise SnapshotError(
            f"the store does not hold the locked bytes of {len(wrong)} document(s):\n  "
            + "\n  ".join(str(m) for m in wrong[:20]),
            names=[m.name for m in wrong],
            hint="run `dk-mirror sync --locked` first",
        )
    return names, pinned


def from_history(store: StoreAccess, entries: Sequence[lockfile.LockEntry]) -> dict[str, Document]:
    """The locked versions the store's history still keeps, by name."""
    found: dict[str, Document] = {}
    for entry in entries:
        doc = store.version_document(entry.name, entry.sha256.removeprefix("sha256:"))
        if doc is not None:
            found[entry.name] = doc
    return found
