"""Import use cases: Document records from a JSON Lines file or the shipped sample, streamed
into the store in one transaction, keeping newer stored copies unless told to overwrite."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import Document, content_sha256
from ..policy import keeps_stored
from .context import Context

if TYPE_CHECKING:
    from ..store.store import Store

# Names looked up per query when an import compares with the store (SQLite caps parameters).
IMPORT_LOOKUP = 200
# ... or fewer when their pages are big: the batch waiting for its lookup is held in memory.
LOOKUP_CHARS = 2 << 20
# How many file names the rows of an import of several files record as their provenance.
SHOW_FILES = 3


@dataclass(slots=True)
class ImportFileReport:
    """What an `import` wrote, which records it left out because the store's copy is newer,
    and how many records repeated a name (the last copy won). Of the records written: `new`
    (the store had no readable copy), `changed` (other content), `unchanged` (same content)."""

    imported: int = 0
    skipped: list[str] = field(default_factory=list)
    duplicates: int = 0
    store: str = ""
    new: int = 0
    changed: int = 0
    unchanged: int = 0

    def to_json(self) -> dict[str, Any]:
        """As `import --json` prints it."""
        return {
            "imported": self.imported,
            "new": self.new,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "duplicates": self.duplicates,
            "store": self.store,
        }


def import_file(ctx: Context, path: Path, *, overwrite: bool = False) -> ImportFileReport:
    """Import Document records from a JSONL(.gz) file, streamed, all or nothing; a newer
    stored copy is kept unless `overwrite`."""
    return import_files(ctx, [path], overwrite=overwrite)


def import_files(
    ctx: Context, paths: Sequence[Path], *, overwrite: bool = False
) -> ImportFileReport:
    """Import several JSONL(.gz) files as one import, in order, all or nothing: a bad record
    in the last file leaves none of the first stored (`dk-mirror import corpus/*.jsonl.gz`)."""
    from ..records import iter_documents

    limit = ctx.settings.max_document_bytes
    docs = chain.from_iterable(iter_documents(path, max_document_bytes=limit) for path in paths)
    return _import(ctx, docs, _label(paths), overwrite)


def _label(paths: Sequence[Path]) -> str:
    """Where an import's copies came from, as their rows record it (a glob of a hundred files
    names three)."""
    names = [path.name for path in paths[:SHOW_FILES]]
    more = f" and {len(paths) - SHOW_FILES} more" if len(paths) > SHOW_FILES else ""
    return "import " + ", ".join(names) + more


def import_sample(ctx: Context, *, overwrite: bool = False) -> ImportFileReport:
    """Import the sample documents shipped with dk-mirror (keeping newer stored copies)."""
    from ..records import iter_sample

    return _import(ctx, iter_sample(), "sample", overwrite)


def _import(
    ctx: Context, docs: Iterable[Document], upstream: str, overwrite: bool
) -> ImportFileReport:
    report = ImportFileReport(store=ctx.store.url)
    # The full Store, whose pooled connections any thread may use: put_stream reads `docs`
    # (and so the lookups of _compared) in a thread of its own, which the cold-start
    # Reader's single connection does not allow.
    store = ctx.store.full()
    compared = _compared(store, docs, report, overwrite)
    written = store.put_stream(compared, fetched_at=ctx.clock(), upstream=upstream)
    report.imported, report.duplicates = written.documents, written.duplicates
    return report


def _compared(
    store: Store, docs: Iterable[Document], report: ImportFileReport, overwrite: bool
) -> Iterator[Document]:
    """`docs` compared with the store a batch at a time (so the stream stays bounded): those
    whose stored copy is newer dropped unless `overwrite` (their names go to `skipped`), the
    rest counted as new, changed or unchanged."""
    batch: list[Document] = []
    held = 0
    for doc in docs:
        batch.append(doc)
        held += len(doc.content or "")
        if len(batch) >= IMPORT_LOOKUP or held >= LOOKUP_CHARS:
            yield from _sorted_out(store, batch, report, overwrite)
            batch, held = [], 0
    yield from _sorted_out(store, batch, report, overwrite)


def _sorted_out(
    store: Store, batch: list[Document], report: ImportFileReport, overwrite: bool
) -> Iterator[Document]:
    cached = store.get_many(list(dict.fromkeys(d.name for d in batch))) if batch else {}
    for doc in batch:
        before = cached.get(doc.name)
        # A fetched copy may be newer than the file (the shipped sample ages): keep it.
        if not overwrite and keeps_stored(before, doc.update_time):
            report.skipped.append(doc.name)
            continue
        if before is None or not before.document.content:
            report.new += 1
        elif before.sha256 == content_sha256(doc.content or ""):
            report.unchanged += 1
        else:
            report.changed += 1
        yield doc
