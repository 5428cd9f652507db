"""The store's outline for the browser: the page tree and the type-ahead index, kept current.

Both come from one pass over the stored documents (titles, and headings read from the
Markdown), which takes seconds at tens of thousands of pages; so the outline is built once,
reused while the store is unchanged, and after a change rebuilt in the background while the
previous one keeps answering (a crawl writing every second must not stall every keystroke).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from ..errors import InvalidInput
from ..models import Document
from ..search.headings import headings
from ..search.sitetree import SiteTree
from ..search.snippets import plain_title
from ..search.typeahead import Entry, TypeaheadIndex
from ..symbols.model import Symbol
from .context import Context

log = logging.getLogger(__name__)

# Without a generation number (PostgreSQL), how long an outline is trusted before a rebuild.
UNVERSIONED_TTL = 60.0
# A store this small is outlined while the first page waits (well under a second on the
# sample); a bigger one in the background, pages showing no tree until it is ready.
INLINE_BUILD_PAGES = 5000
# Shorter queries match too many pages' words for full text to add anything but noise.
FULL_TEXT_MIN_CHARS = 3


@dataclass(frozen=True, slots=True)
class Outline:
    """Every page by host and path, and every title and heading by prefix."""

    tree: SiteTree
    typeahead: TypeaheadIndex
    titles: dict[str, str]  # every page's title by name (what full-text results show)
    seconds: float  # how long the build took


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One type-ahead result: where it leads and why it matched."""

    kind: str  # "symbol", "page", "heading" or "text" (a full-text match)
    label: str
    name: str
    anchor: str | None
    context: str


def entries_of(doc: Document) -> Iterator[Entry]:
    """A page's type-ahead entries: its title, then each heading (not one that repeats it)."""
    title = plain_title(doc.title or "") or doc.name.rsplit("/", 1)[-1]
    folder = doc.name.split("/", 1)[1].rsplit("/", 1)[0]  # where it sits: host/path
    yield Entry("page", title, doc.name, None, folder)
    for heading in headings(doc.content or ""):
        if heading.level == 1 and heading.text == title:
            continue
        yield Entry("heading", heading.text, doc.name, heading.anchor, title)


def symbol_entry(symbol: Symbol) -> Entry:
    """A symbol of the index as a type-ahead entry: `chrome.storage.local.get`, a Method of
    `chrome.storage.local`."""
    context = f"{symbol.type} of {symbol.parent}" if symbol.parent else symbol.type
    return Entry("symbol", symbol.name, symbol.document, symbol.anchor, context)


def build(
    documents: Iterable[Document],
    symbols: Iterable[Symbol] = (),
    clock: Callable[[], float] = time.perf_counter,
) -> Outline:
    """The outline of these documents (name order) and API symbols, in one pass."""
    start = clock()
    pages: list[tuple[str, str | None]] = []
    entries = [symbol_entry(symbol) for symbol in symbols]
    for doc in documents:
        pages.append((doc.name, plain_title(doc.title or "") or None))
        entries.extend(entries_of(doc))
    titles = {name: title or name.rsplit("/", 1)[-1] for name, title in pages}
    return Outline(SiteTree(pages), TypeaheadIndex(entries), titles, clock() - start)


def _build_from(ctx: Context) -> Outline:
    # Symbols first: read in one query, before the long pass over the documents.
    symbols = ctx.store.symbol_list()
    return build(ctx.store.iter_documents(), symbols)


class OutlineCache:
    """The current outline of one store, rebuilt after the store changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._first = threading.Lock()  # one first build at a time; others wait for it
        self._current: Outline | None = None
        self._key: object = None
        self._built_at = 0.0
        self._rebuilding = False

    @property
    def ready(self) -> bool:
        """Whether an outline has been built (a later one may be on its way)."""
        return self._current is not None

    def get(self, ctx: Context, generation: int | None, *, wait: bool = True) -> Outline | None:
        """The outline, possibly one change behind; if there is none yet, built now (`wait`)
        or in the background (None until it is ready)."""
        with self._lock:
            current = self._current
            stale = current is None or self._is_stale(generation)
            if stale and not self._rebuilding and (current is not None or not wait):
                self._rebuilding = True
                threading.Thread(
                    target=self._rebuild, args=(ctx, generation), daemon=True, name="outline"
                ).start()
        if current is not None or not wait:
            return current
        with self._first:
            if self._current is None:
                self._store(_build_from(ctx), generation)
            assert self._current is not None
            return self._current

    def _is_stale(self, generation: int | None) -> bool:
        if generation is None:
            return time.monotonic() - self._built_at > UNVERSIONED_TTL
        return generation != self._key

    def _rebuild(self, ctx: Context, generation: int | None) -> None:
        try:
            self._store(_build_from(ctx), generation)
        except Exception as exc:  # a background thread: nobody else would hear of it
            # The store closed under it, or a read failed: the previous outline (if any)
            # keeps answering, and the next call tries again.
            log.warning("the browser's page outline was not rebuilt: %s", exc)
        finally:
            with self._lock:
                self._rebuilding = False

    def _store(self, outline: Outline, generation: int | None) -> None:
        with self._lock:
            self._current, self._key, self._built_at = outline, generation, time.monotonic()


def suggest(
    outline: Outline | None,
    query: str,
    limit: int,
    full_text: Callable[[str, int], list[str]] | None,
) -> list[Suggestion]:
    """Symbols, titles and headings that start with what was typed, then full-text pages.

    `full_text(query, n)` returns the names of up to n pages matching the words anywhere;
    it is asked only for what the prefix matches leave of `limit`, and pages already offered
    are not repeated, nor pages the store does not hold (a recorded upstream answer). With
    no outline yet (a big store's first build), full text answers alone.
    """
    found = [
        Suggestion(e.kind, e.label, e.name, e.anchor, e.context)
        for e in (outline.typeahead.lookup(query, limit) if outline else [])
    ]
    room = limit - len(found)
    if room > 0 and full_text is not None and len(query.strip()) >= FULL_TEXT_MIN_CHARS:
        offered = {s.name for s in found if s.anchor is None}
        for name in full_text(query, room + len(offered)):
            if name in offered or (outline is not None and name not in outline.titles):
                continue
            offered.add(name)
            title = outline.titles[name] if outline else name.rsplit("/", 1)[-1]
            folder = name.split("/", 1)[1].rsplit("/", 1)[0]
            found.append(Suggestion("text", title, name, None, folder))
            if len(found) >= limit:
                break
    return found


def local_full_text(ctx: Context) -> Callable[[str, int], list[str]]:
    """Pages of the local full-text index, best first: the ranking alone (no chunks, no
    snippets, no upstream), which is all a keystroke can afford."""
    from .ranking import lexical_ranking

    def pages(query: str, n: int) -> list[str]:
        try:
            ranking = lexical_ranking(ctx, query, limit=min(max(n, 1), 50))
        except InvalidInput:
            return []  # text the index cannot parse as a query: prefix matches only
        return [hit.name for hit in ranking]

    return pages
