"""Batches of documents prepared for writing: their rows, content hashes and search index
entries, derived without the database's write lock (Store.put_stream's reading thread)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...models import Document
from ..db.rows import document_row

if TYPE_CHECKING:
    from ..textindex.sqlite.entries import Entry

# Documents written per statement by put_stream: bounds memory (a few hundred pages) while
# keeping executemany batches large enough to cost little per row.
PUT_BATCH = 200
# ... and of at most about this much Markdown: several batches are in memory at once (one
# being read, PREPARED_AHEAD waiting, one being written), so big pages make smaller batches.
PUT_BATCH_CHARS = 2 << 20
# Batches put_stream's reading thread may have prepared before the writer takes them: enough
# to keep both threads busy, few enough to bound memory (a batch is a few MB).
PREPARED_AHEAD = 1


@dataclass(frozen=True, slots=True)
class Prepared:
    """A batch of documents with what writing them needs that the database does not: their
    rows, content hashes, search index entries and symbol rows (pure work, done ahead in
    put_stream; `symbol_rows` empty when not done ahead: the writer derives them then)."""

    docs: list[Document]
    rows: list[dict[str, Any]]
    hashes: dict[str, str | None]
    entries: Mapping[str, Entry]
    fetched_at: float
    upstream: str
    symbol_rows: Mapping[str, list[dict[str, Any]]]


def prepare(docs: list[Document], fetched_at: float, upstream: str, raw: Any = None) -> Prepared:
    """Derive a batch's rows and hashes, and with `raw` (an SQLite connection to read the
    store with) the index entries of the documents it does not hold as they are."""
    from ..tables.symbols import rows_of
    from ..textindex.sqlite.engine import entries_ahead

    # With `raw` (SQLite, put_stream's reading thread) the content is compressed here too:
    # zlib releases the GIL, so it runs beside the writer instead of at its bind time.
    packed = raw is not None
    rows = [document_row(doc, fetched_at, upstream, packed=packed) for doc in docs]
    hashes = {row["name"]: row["content_sha256"] for row in rows}
    ready = entries_ahead(raw, docs, hashes) if raw is not None else {}
    # Ahead, symbols too: extracting them was a third of an import's time on the writer.
    symbol_rows = {doc.name: rows_of(doc.name, doc.content) for doc in docs} if packed else {}
    return Prepared(docs, rows, hashes, ready, fetched_at, upstream, symbol_rows)


def batches(docs: Iterable[Document], size: int, chars: int) -> Iterator[list[Document]]:
    # At most `size` documents, and a batch of big pages ends at about `chars` of content.
    batch: list[Document] = []
    held = 0
    for doc in docs:
        batch.append(doc)
        held += len(doc.content or "")
        if len(batch) == size or held >= chars:
            yield batch
            batch, held = [], 0
    if batch:
        yield batch
