"""The store as it was at a past instant: one read view, implementing the same interface as
Store and Reader (api.StoreAccess), so every use case (get, ls, search, answers, exports,
snapshots) reads the past by being handed this view instead of the store, and nothing else.

Every read answers from the kept history (tables/asof.py): a document is there only if a
version of it was fetched at or before `at`, with that version's content and metadata; a name
whose version of then was pruned is absent (and `as_of` names it, so a get can say so) rather
than answered with a newer copy. Writes are refused: the past is read-only.

Search, decided: the current full-text index, filtered and re-checked, not a scan of the
as-of versions. Documents unchanged since `at` (in a living mirror, nearly all of them) have
the same text then and now, so the index's ranking of them is exact. The few changed since
are re-checked on their text of then: kept only if that text still has the query's words,
and those changed pages the index no longer finds for the query but whose text of then has
the words are added after the index's hits. A scan would rank every page from its text of
then, but would read and score the whole store's Markdown on every query (seconds per search
on the 2,800-page corpus, growing with the store) to change only the order among changed
pages. Recorded upstream pages and the semantic index describe the store as it is now, so
neither is used as of a past time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from ..errors import InvalidInput
from ..models import AsOf, CachedDocument, Document, Stats, Summary, rfc3339
from ..search import lexical
from .textindex.ranking import LONG_QUERY, DocumentHit, LocalHit, grouped

if TYPE_CHECKING:
    from ..changes.events import ChangeEvent, ChangeFilter
    from ..models import Answer, PutReport, SearchPage, Stamp, StoreFacts, Version
    from ..search.filters import Node
    from ..symbols.model import Symbol
    from .api import StoreAccess
    from .store import Store
    from .tables.buckets import Buckets
    from .tables.recorded import RecordedAnswer, RecordedPage
    from .tables.vector_state import SemanticFacts, VectorState
    from .textindex.api import IndexState

# Documents read with their content at once while streaming an as-of export.
STREAM_BATCH = 200
# The index is asked for this many more hits than wanted: some drop out as of the past.
OVERFETCH = 3


class AsOfStore:
    """`store` as it was at `at` (Unix seconds): read-only, answered from its history."""

    def __init__(self, store: StoreAccess, at: float) -> None:
        self.store = store
        self.at = at
        self._recordings = _NoRecordings(self)

    def refuse(self, what: str) -> NoReturn:
        """A write (or a read of the present) asked of the past."""
        raise InvalidInput(
            f"as of {rfc3339(self.at)} the store is read-only history: cannot {what}",
            hint="drop --as-of to change or refresh the store",
        )

    # -- what the view answers from the history ------------------------------------------------

    @property
    def url(self) -> str:
        """The store's URL (a password masked)."""
        return self.store.url

    @property
    def readonly(self) -> bool:
        """Always: the past cannot be written."""
        return True

    @property
    def recordings(self) -> _NoRecordings:
        """No recorded pages: they were recorded against the store as it is now."""
        return self._recordings

    def revision(self) -> str | None:
        """The schema revision stamped in the database."""
        return self.store.revision()

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
        """The history at `at`, never later than this view's own instant."""
        return self.store.as_of(
            min(at, self.at), names=names, prefix=prefix, data_source=data_source,
            content=content, limit=limit,
        )  # fmt: skip

    def changes(self, wanted: ChangeFilter) -> list[ChangeEvent]:
        """The change log as it stood at this view's instant: later events had not happened."""
        until = math.nextafter(self.at, math.inf)  # events observed at the instant count
        if wanted.until is not None:
            until = min(until, wanted.until)
        return self.store.changes(replace(wanted, until=until))

    def get_many(self, names: Sequence[str]) -> dict[str, CachedDocument]:
        """The copies of `names` the store held then (pruned and later ones absent)."""
        if not names:
            return {}
        found = self.as_of(self.at, names=names, content=True).observed
        return {
            o.version.name: CachedDocument(
                o.document, o.version.sha256, o.version.fetched_at, o.version.upstream
            )
            for o in found
        }

    # Symbols: the index as it is now, of the pages the store held then. A page changed since
    # shows its current symbols: the index keeps no history (a view is read rarely, and a
    # symbol's name and type seldom change when its page does).

    def symbol_exact(self, name: str) -> Symbol | None:
        """The symbol called `name` if its page was held then."""
        found = self.store.symbol_exact(name)
        return found if found is not None and self._held_then([found]) else None

    def symbol_lookup(self, prefix: str, limit: int) -> list[Symbol]:
        """Up to `limit` symbols starting with `prefix` whose pages were held then."""
        return self._held_then(self.store.symbol_lookup(prefix, limit))

    def symbol_list(self) -> list[Symbol]:
        """Every symbol whose page was held then."""
        return self._held_then(self.store.symbol_list())

    def _held_then(self, symbols: list[Symbol]) -> list[Symbol]:
        pages = sorted({s.document for s in symbols})
        held = (
            {o.version.name for o in self.as_of(self.at, names=pages).observed} if pages else set()
        )
        return [s for s in symbols if s.document in held]

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None, *, content_only: bool = False
    ) -> Iterator[Summary]:
        """Documents the store held then, by name (every version has content)."""
        for o in self.as_of(self.at, prefix=prefix, limit=limit).observed:
            doc = o.document
            yield Summary(doc.name, doc.title, doc.data_source, doc.update_time,
                          doc.content_length_bytes, True, o.version.fetched_at)  # fmt: skip

    def iter_documents(
        self,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
    ) -> Iterator[Document]:
        """Documents as they were then, in name order, streamed a batch at a time."""
        listed = self.as_of(self.at, prefix=prefix, data_source=data_source, names=names)
        held = [o.version.name for o in listed.observed]
        for start in range(0, len(held), STREAM_BATCH):
            batch = held[start : start + STREAM_BATCH]
            yield from (o.document for o in self.as_of(self.at, names=batch, content=True).observed)

    def stats(self) -> Stats:
        """Counts, bytes and fetch times of the store as it was then."""
        observed = self.as_of(self.at).observed
        by_source: dict[str, int] = {}
        for o in observed:
            source = o.document.data_source or ""
            by_source[source] = by_source.get(source, 0) + 1
        fetched = [o.version.fetched_at for o in observed]
        return Stats(
            documents=len(observed),
            with_content=len(observed),
            content_bytes=sum(o.document.content_length_bytes or 0 for o in observed),
            oldest_fetch=min(fetched, default=None),
            newest_fetch=max(fetched, default=None),
            by_data_source=dict(sorted(by_source.items())),
        )

    def versions(self, name: str) -> list[Version]:
        """The versions of `name` fetched by then, newest first."""
        return [v for v in self.store.versions(name) if v.fetched_at <= self.at]

    def version_document(self, name: str, sha256: str) -> Document | None:
        """`name` with content `sha256`, if that content had been fetched by then."""
        if not any(v.sha256 == sha256 for v in self.versions(name)):
            return None
        return self.store.version_document(name, sha256)

    # -- search --------------------------------------------------------------------------------

    def rank_documents(
        self, query: str, *, limit: int = 10, where: Node | None = None
    ) -> list[DocumentHit]:
        """The current index's ranking, kept to what the store held then (module docstring)."""
        pool = self.store.rank_documents(query, limit=limit * OVERFETCH + 10, where=where)
        then = {o.version.name: o for o in self.as_of(self.at).observed}
        # Changed since (or gone from the store since): their text of then decides.
        changed = sorted(name for name, o in then.items() if not o.version.current)
        texts = {n: c.document.content or "" for n, c in self.get_many(changed).items()}
        matches = _matcher(query)
        kept = [h for h in pool if h.name in then and (h.name not in texts or matches(texts[h.name]))]  # fmt: skip
        ranked = {h.name for h in pool}
        extra = [n for n in changed if n not in ranked and matches(texts.get(n, ""))]
        if extra and where is not None:
            passing = self.store.passing(extra, where)
            extra = [n for n in extra if n in passing]
        floor = min((h.score for h in kept), default=1.0)
        last = max((h.rank for h in kept), default=0.0)
        kept += [DocumentHit(n, last + 1 + i, floor * 0.99) for i, n in enumerate(extra)]
        return kept[:limit]

    def search_local(
        self, query: str, *, limit: int = 5, offset: int = 0, where: Node | None = None
    ) -> list[LocalHit]:
        """Best-matching chunks of the documents as they were then."""
        ranking = self.rank_documents(query, limit=offset + limit, where=where)

        def contents(names: list[str]) -> dict[str, str | None]:
            return {n: c.document.content for n, c in self.get_many(names).items()}

        return grouped(ranking, query, offset + limit, contents)[offset : offset + limit]

    def headlines(self, query: str, shown: Sequence[str]) -> list[list[tuple[str, bool]]] | None:
        """None: the database's snippets are cut from today's text; the caller cuts them."""
        return None

    def has_search_index(self) -> bool:
        """Whether local full-text search is available."""
        return self.store.has_search_index()

    def check_index(self) -> IndexState:
        """How the search index compares with the documents (of now)."""
        return self.store.check_index()

    def semantic_state(self) -> VectorState | None:
        """None: the vectors embed today's text, so the past is searched lexically."""
        return None

    def vector_rows(
        self, model_key: str
    ) -> tuple[VectorState | None, list[str], list[bytes], list[float]]:
        """No vectors as of the past (see semantic_state)."""
        return None, [], [], []

    def passing(self, names: Sequence[str], where: Node) -> set[str]:
        """The names passing the filter `where` (on the metadata the store holds now)."""
        return self.store.passing(names, where)

    def semantic_facts(self, model_key: str) -> SemanticFacts:
        """The semantic index's facts (of now)."""
        return self.store.semantic_facts(model_key)

    # -- the store itself, unchanged -----------------------------------------------------------

    def facts(self, *, integrity: bool = False) -> StoreFacts:
        """Where the store is and its state."""
        return self.store.facts(integrity=integrity)

    def integrity(self) -> list[str]:
        """Problems SQLite's quick_check finds."""
        return self.store.integrity()

    def journal_mode(self) -> str | None:
        """SQLite's journal mode in force."""
        return self.store.journal_mode()

    @property
    def buckets(self) -> Buckets:
        """Quota buckets (nothing as of the past calls upstream; kept for the interface)."""
        return self.store.buckets

    def close(self) -> None:
        """Close the store underneath."""
        self.store.close()

    def on_written(self, watcher: Callable[[list[str]], None]) -> None:
        """Nothing is ever written through the past, so there is nothing to watch."""

    # -- refused: writes, and reads of the present -----------------------------------------

    def full(self) -> Store:
        """Refused: the full Store would read the present."""
        self.refuse("open the store as it is now")

    def refresh_stamps(self, prefix: str | None, checked_before: float | None) -> list[Stamp]:
        """Refused: a refresh writes."""
        self.refuse("refresh")

    def put(self, docs: Iterable[Document], *, fetched_at: float, upstream: str) -> int:
        """Refused."""
        self.refuse("write documents")

    def put_stream(
        self, docs: Iterable[Document], *, fetched_at: float, upstream: str
    ) -> PutReport:
        """Refused."""
        self.refuse("write documents")

    def apply_stream(
        self, changes: Iterable[Document | str], *, fetched_at: float, upstream: str
    ) -> tuple[int, int]:
        """Refused."""
        self.refuse("write documents")

    def rebuild_index(self) -> int:
        """Refused."""
        self.refuse("rebuild the search index")

    def rebuild_symbols(self) -> int:
        """Refused."""
        self.refuse("rebuild the symbol index")

    def begin_vectors(
        self, model_key: str, *, rebuild: bool = False, names: Sequence[str] | None = None
    ) -> list[str]:
        """Refused."""
        self.refuse("build the semantic index")

    def write_vectors(
        self, model_key: str, docs: Sequence[Document], vectors: Sequence[tuple[bytes, float]]
    ) -> None:
        """Refused."""
        self.refuse("build the semantic index")

    def prune_versions(self, keep: int, names: Sequence[str] | None = None) -> int:
        """Refused."""
        self.refuse("prune the history")

    def mark_checked(self, names: Sequence[str], at: float) -> None:
        """Refused."""
        self.refuse("refresh")

    def mark_gone(self, names: Sequence[str], at: float) -> None:
        """Refused."""
        self.refuse("refresh")

    def clear_gone(self, names: Sequence[str]) -> None:
        """Refused."""
        self.refuse("refresh")


def _matcher(query: str) -> Callable[[str], bool]:
    """Whether a text has the query's words (all of them; any, for a long query, as the
    index ranks long queries), compared as the chunk scorer does (lexical.chunk_scores)."""
    terms = lexical.query_terms(query)
    keys = list(dict.fromkeys(lexical.stem_key(p) for t in terms for p in (t.parts or (t.text,))))
    need = any if len(terms) >= LONG_QUERY else all

    def matches(text: str) -> bool:
        folded = text.casefold()
        return bool(keys) and need(key in folded for key in keys)

    return matches


class _NoRecordings:
    """Recordings as of the past: none to replay (they describe the store now), none written."""

    def __init__(self, view: AsOfStore) -> None:
        self.view = view

    def page(self, key: str) -> RecordedPage | None:
        """No recorded page."""
        return None

    def answer(self, key: str) -> RecordedAnswer | None:
        """No recorded answer."""
        return None

    def save_page(
        self, key: str, request: dict[str, Any], page: SearchPage, *, at: float, upstream: str
    ) -> None:
        """Refused."""
        self.view.refuse("record a search")

    def note_metadata(self, docs: Sequence[Document], *, at: float, upstream: str) -> None:
        """Refused."""
        self.view.refuse("record search results")

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
        """Refused."""
        self.view.refuse("record an answer")

    def take_quota(self, bucket: str, period: str, limit: int) -> int | None:
        """Refused: nothing as of the past goes upstream."""
        self.view.refuse("call upstream")


if TYPE_CHECKING:
    # Checked by mypy, never run: the view implements the whole interface.
    def _agrees(view: AsOfStore) -> StoreAccess:
        return view
