"""Copy a store into another database (a laptop's SQLite store into the team's PostgreSQL),
verified by the snapshot roots of both: the same documents hash to the same root."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from ..snapshots import format as snapshot
from .context import Context

if TYPE_CHECKING:
    from ..store.db.copy import Progress
    from ..store.store import Store


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What a copy carried and the snapshot root both stores agree on."""

    source: str
    destination: str
    rows: dict[str, int] = field(default_factory=dict)
    root: str = ""

    @property
    def documents(self) -> int:
        """Documents copied (with or without content)."""
        return self.rows.get("documents", 0)

    @property
    def versions(self) -> int:
        """History versions copied."""
        return self.rows.get("document_versions", 0)

    def to_json(self) -> dict[str, Any]:
        """As `db copy --json` prints it."""
        return {
            "source": self.source,
            "destination": self.destination,
            "documents": self.documents,
            "versions": self.versions,
            "rows": dict(sorted(self.rows.items())),
            "root": self.root,
        }


def snapshot_root(store: Store) -> str:
    """The root a full snapshot of every document with content would carry, streamed."""
    hasher = snapshot.RootHasher()
    for doc in store.iter_documents():
        hasher.add(doc.name, *snapshot.document_hashes(doc))
    return hasher.hexdigest()


def copy_store(ctx: Context, destination: str, progress: Progress | None = None) -> CopyReport:
    """Copy the store of `ctx` into the empty store at `destination` and compare their roots."""
    from ..store.db.copy import copy_rows
    from ..store.store import Store
    from .crawl import full_store

    source = full_store(ctx)
    dest = Store.open(destination)
    try:
        if dest.url == source.url:
            raise StoreError(
                "the copy's destination is its source", hint="name another database to copy into"
            )
        rows = copy_rows(source, dest, progress)
        before, after = snapshot_root(source), snapshot_root(dest)
        if before != after:
            raise StoreError(
                f"the copy in {dest.where} does not match its source: snapshot root {after}, "
                f"expected {before}",
                hint="report this as a bug; drop the destination before copying again",
            )
    finally:
        dest.close()
    return CopyReport(source.url, dest.url, rows, before)
