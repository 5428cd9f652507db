"""The store's interface as the service sees it: what both the full Store (store.py) and the
cold-start Reader (reader.py) implement, so the type checker keeps the two in agreement.

`StoreReads` holds the reads, which the Reader answers itself on stdlib sqlite3 wherever it
can; `StoreAccess` adds the writes and what only the full Store does, which the Reader hands
to a full Store opened on first need. The service types its use cases against these, never
against either class.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..changes.events import ChangeEvent, ChangeFilter
    from ..models import (
        Answer,
        AsOf,
        CachedDocument,
        Document,
        PutReport,
        SearchPage,
        Stamp,
        Stats,
        StoreFacts,
        Summary,
        Version,
    )
    from ..search.filters import Node
    from ..symbols.model import Symbol
    from .reader import Reader
    from .store import Store
    from .tables.buckets import Buckets
    from .tables.recorded import RecordedAnswer, RecordedPage
    from .tables.vector_state import SemanticFacts, VectorState
    from .textindex.api import IndexState
    from .textindex.ranking import DocumentHit, LocalHit


class RecordingAccess(Protocol):
    """Recorded searches and answers, and local quota counts."""

    def page(self, key: str) -> RecordedPage | None:
        """The recorded page for a request key, if any."""
        ...

    def answer(self, key: str) -> RecordedAnswer | None:
        """The recorded answer for a request key, if any."""
        ...

    def save_page(
        self, key: str, request: dict[str, Any], page: SearchPage, *, at: float, upstream: str
    ) -> None:
        """Record one upstream search page under its request key."""
        ...

    def note_metadata(self, docs: Sequence[Document], *, at: float, upstream: str) -> None:
        """Keep metadata seen in search results (never over a copy with content)."""
        ...

    def save_answer(
        self,
        key: str,
        request: dict[str, Any],
        answer: Answer,
        cited: dict[str, str | None],
        *,
        at: float,
        upstream: str,
    ) -> None:
        """Record an answer and the content hashes of the documents it cites."""
        ...

    def take_quota(self, bucket: str, period: str, limit: int) -> int | None:
        """Count one call if it fits under `limit`; the new count, or None when full."""
        ...


class StoreReads(Protocol):
    """The reads of a store."""

    @property
    def url(self) -> str:
        """The store's URL (a password masked)."""
        ...

    @property
    def readonly(self) -> bool:
        """Opened read-only."""
        ...

    @property
    def recordings(self) -> RecordingAccess:
        """Recorded searches and answers, and local quota counts."""
        ...

    def revision(self) -> str | None:
        """The schema revision stamped in the database (None when blank)."""
        ...

    def get_many(self, names: Sequence[str]) -> dict[str, CachedDocument]:
        """Cached copies of `names` that exist, by name."""
        ...

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None, *, content_only: bool = False
    ) -> Iterator[Summary]:
        """Documents by name, optionally only those whose name starts with `prefix`."""
        ...

    def iter_documents(
        self,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
    ) -> Iterator[Document]:
        """Documents with content in name order, streamed."""
        ...

    def stats(self) -> Stats:
        """Counts, bytes and fetch times over the whole store."""
        ...

    def facts(self, *, integrity: bool = False) -> StoreFacts:
        """Where the store is and its state."""
        ...

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds (empty when healthy)."""
        ...

    def journal_mode(self) -> str | None:
        """SQLite's journal mode in force, or None for other databases."""
        ...

    def has_search_index(self) -> bool:
        """Whether local full-text search is available."""
        ...

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks in the local index."""
        ...

    def rank_documents(
        self, query: str, *, limit: int = 10, where: Node | None = None
    ) -> list[DocumentHit]:
        """The lexical ranking: the best `limit` documents for `query`, best first."""
        ...

    def headlines(self, query: str, shown: Sequence[str]) -> list[list[tuple[str, bool]]] | None:
        """Snippets by the database's own machinery, or None where the caller cuts them."""
        ...

    def check_index(self) -> IndexState:
        """How the search index compares with the documents."""
        ...

    def symbol_exact(self, name: str) -> Symbol | None:
        """The symbol called `name` (case folded) whose page is stored, or None."""
        ...

    def symbol_lookup(self, prefix: str, limit: int) -> list[Symbol]:
        """Up to `limit` symbols whose name, or else whose last part, starts with `prefix`:
        the exact name first, then the others in order (a namespace before its members)."""
        ...

    def symbol_list(self) -> list[Symbol]:
        """Every symbol whose page is stored, one per name, by name."""
        ...

    def semantic_state(self) -> VectorState | None:
        """The semantic index's model and generation (None: never built)."""
        ...

    def vector_rows(
        self, model_key: str
    ) -> tuple[VectorState | None, list[str], list[bytes], list[float]]:
        """The semantic index's state and current vectors of `model_key`, in name order."""
        ...

    def passing(self, names: Sequence[str], where: Node) -> set[str]:
        """The names among `names` whose documents pass the filter `where`."""
        ...

    def semantic_facts(self, model_key: str) -> SemanticFacts:
        """The semantic index's model, current vectors and documents waiting for one."""
        ...

    def versions(self, name: str) -> list[Version]:
        """Every stored version of `name`, newest first, the current one marked."""
        ...

    def version_document(self, name: str, sha256: str) -> Document | None:
        """`name` as it was with content `sha256`, from its history; None if not kept."""
        ...

    def as_of(
        self,
        at: float,
        *,
        names: Sequence[str] | None = None,
        prefix: str | None = None,
        data_source: str | None = None,
        content: bool = False,
        limit: int | None = None,
    ) -> AsOf:
        """Documents as the store held them at `at` (Unix seconds), from the kept history, in
        name order; and the names whose version of then was pruned."""
        ...

    def refresh_stamps(self, prefix: str | None, checked_before: float | None) -> list[Stamp]:
        """Documents with content (under `prefix`) last checked before `checked_before`."""
        ...

    def changes(self, wanted: ChangeFilter) -> list[ChangeEvent]:
        """The change log's events `wanted` selects, newest first."""
        ...


class StoreAccess(StoreReads, Protocol):
    """A store's reads, its writes, and the full Store for what only it does."""

    @property
    def buckets(self) -> Buckets:
        """Quota buckets shared by every process pacing its upstream calls on this store."""
        ...

    def full(self) -> Store:
        """The full Store on this database (itself, or one opened on first need)."""
        ...

    def close(self) -> None:
        """Close every connection."""
        ...

    def put(self, docs: Iterable[Document], *, fetched_at: float, upstream: str) -> int:
        """Write documents in one transaction; returns how many."""
        ...

    def put_stream(
        self, docs: Iterable[Document], *, fetched_at: float, upstream: str
    ) -> PutReport:
        """Write a stream of documents in one transaction; all or nothing."""
        ...

    def apply_stream(
        self, changes: Iterable[Document | str], *, fetched_at: float, upstream: str
    ) -> tuple[int, int]:
        """Upsert documents and delete names from a stream, in one transaction."""
        ...

    def rebuild_index(self) -> int:
        """Rebuild the search index from the documents; how many it holds."""
        ...

    def rebuild_symbols(self) -> int:
        """Derive the symbol index from the documents again; how many rows it holds."""
        ...

    def on_written(self, watcher: Callable[[list[str]], None]) -> None:
        """Call `watcher` with the names each write changes, after its commit."""
        ...

    def begin_vectors(
        self, model_key: str, *, rebuild: bool = False, names: Sequence[str] | None = None
    ) -> list[str]:
        """Turn the semantic index on for `model_key`; the documents waiting for a vector."""
        ...

    def write_vectors(
        self, model_key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
        """Store the quantized vectors of `docs` for `model_key`, in one transaction."""
        ...

    def prune_versions(self, keep: int, names: Sequence[str] | None = None) -> int:
        """Keep the newest `keep` versions of each document; how many were dropped."""
        ...

    def mark_checked(self, names: Sequence[str], at: float) -> None:
        """Upstream has `names` unchanged: count their copies as fetched `at`."""
        ...

    def mark_gone(self, names: Sequence[str], at: float) -> None:
        """Upstream no longer has `names`: flag them, keep their copies."""
        ...

    def clear_gone(self, names: Sequence[str]) -> None:
        """Upstream has `names` again: drop their gone flags."""
        ...


if TYPE_CHECKING:
    # Checked by mypy, never run: both classes implement the whole interface.
    def _both_agree(store: Store, reader: Reader) -> tuple[StoreAccess, StoreAccess]:
        return store, reader
