"""Import use cases: Document records from a JSON Lines file or the shipped sample, streamed
into the store in one transaction, keeping newer stored copies unless told to overwrite."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Document
from ..policy import keeps_stored
from .context import Context

if TYPE_CHECKING:
    from ..store.store import Store

# Names looked up per query when an import compares with the store (SQLite caps parameters).
IMPORT_LOOKUP = 200
# ... or fewer when their pages are big: the batch waiting for its lookup is held in memory.
LOOKUP_CHARS = 2 << 20


@dataclass(slots=True)
class ImportFileReport:
    """What an `import` wrote, which records it left out because the store's copy is newer,
    and how many records repeated a name (the last copy won)."""

    imported: int = 0
    skipped: list[str] = field(default_factory=list)
    duplicates: int = 0
    store: str = ""

    def to_json(self) -> dict[str, Any]:
        """As `import --json` prints it."""
        return {
            "imported": self.imported,
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "store": self.store,
        }


def import_file(ctx: Context, path: Path, *, overwrite: bool = False) -> ImportFileReport:
    """Import Document records from a JSONL(.gz) file, streamed, all or nothing; a newer
    stored copy is kept unless `overwrite`."""
    from ..records import iter_documents

    docs = iter_documents(path, max_document_bytes=ctx.settings.max_document_bytes)
    return _import(ctx, docs, f"import {path.name}", overwrite)


def import_sample(ctx: Context, *, overwrite: bool = False) -> ImportFileReport:
    """Import the sample documents shipped with dk-mirror (keeping newer stored copies)."""
    from ..records import iter_sample

    return _import(ctx, iter_sample(), "sample", overwrite)


def _import(
    ctx: Context, docs: Iterable[Document], upstream: str, overwrite: bool
) -> ImportFileReport:
    skipped: list[str] = []
    # The full Store, whose pooled connections any thread may use: put_stream reads `docs`
    # (and so the lookups of _keeping_newer) in a thread of its own, which the cold-start
    # Reader's single connection does not allow.
    store = ctx.store.full()
    if not overwrite:
        docs = _keeping_newer(store, docs, skipped)
    written = store.put_stream(docs, fetched_at=ctx.clock(), upstream=upstream)
    return ImportFileReport(written.documents, skipped, written.duplicates, ctx.store.url)


def _keeping_newer(
    store: Store, docs: Iterable[Document], skipped: list[str]
) -> Iterator[Document]:
    """`docs` without those whose stored copy is newer (their names go to `skipped`), looked
    up a batch at a time so the stream stays bounded."""
    batch: list[Document] = []
    held = 0
    for doc in docs:
        batch.append(doc)
        held += len(doc.content or "")
        if len(batch) >= IMPORT_LOOKUP or held >= LOOKUP_CHARS:
            yield from _newer_dropped(store, batch, skipped)
            batch, held = [], 0
    yield from _newer_dropped(store, batch, skipped)


def _newer_dropped(store: Store, batch: list[Document], skipped: list[str]) -> Iterator[Document]:
    # A fetched copy may be newer than the file (the shipped sample ages): keep it.
    cached = store.get_many(list(dict.fromkeys(d.name for d in batch))) if batch else {}
    for doc in batch:
        if keeps_stored(cached.get(doc.name), doc.update_time):
            skipped.append(doc.name)
        else:
            yield doc
