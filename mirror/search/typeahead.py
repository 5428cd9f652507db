"""Type-ahead over symbols, page titles and headings: prefix matches in microseconds, pure.

Each label is normalised (lower case, punctuation as spaces: `chrome.storage.local.get` reads
`chrome storage local get`) and written into one string per kind. Two sorted arrays of offsets
into that string answer a prefix with a binary search: one holds where each label starts, the
other where each later word starts. A keystroke is then a few bisections and a slice, however
many pages there are, and the index costs about the labels' own bytes plus 4 per word.

Ranking: an exact label first (an exact symbol before an exact title), then labels that start
with the query, then labels with a word that does; within each, symbols before titles before
headings, and shorter labels (alphabetical order of the rest) first.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

KINDS = ("symbol", "page", "heading")
_PUNCT = re.compile(r"[\W_]+", re.UNICODE)
_SEP = "\n"  # between labels: never inside a normalised label


def normalize(text: str) -> str:
    """Lower case, every run of punctuation or space one space (what prefixes compare on)."""
    return _PUNCT.sub(" ", text.lower()).strip()


@dataclass(frozen=True, slots=True)
class Entry:
    """One place type-ahead can open: a symbol, a page, or a heading on a page."""

    kind: str  # one of KINDS
    label: str  # what the reader sees and types
    name: str  # the document it lives in
    anchor: str | None = None  # the heading's id on that page, if any
    context: str = ""  # the page title (for headings) or the symbol's type


class _Column:
    """All labels of one kind, searchable by label prefix and by word prefix."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        labels = [normalize(e.label) for e in entries]
        self.text = _SEP.join(labels) + _SEP
        starts = array("I")
        words = array("I")
        at = 0
        for label in labels:
            starts.append(at)
            for match in re.finditer(" ", label):
                words.append(at + match.end())
            at += len(label) + 1
        self.starts = starts
        text = self.text
        # Sorted by the rest of the label from each offset; the key is computed once per
        # offset while sorting, never kept.
        self.by_label = array("I", sorted(starts, key=lambda o: text[o : text.index(_SEP, o)]))
        self.by_word = array("I", sorted(words, key=lambda o: text[o : text.index(_SEP, o)]))

    def _range(self, offsets: array[int], query: str) -> range:
        text, n = self.text, len(query)

        def key(o: int) -> str:
            return text[o : o + n]

        return range(bisect_left(offsets, query, key=key), bisect_right(offsets, query, key=key))

    def _entry(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def exact(self, query: str) -> Iterator[int]:
        """Entries whose whole label is `query` (they sort first among its prefixes)."""
        end = len(query)
        for i in self._range(self.by_label, query):
            o = self.by_label[i]
            if self.text[o + end] != _SEP:
                return
            yield self._entry(o)

    def label_prefix(self, query: str) -> Iterator[int]:
        """Entries whose label starts with `query`, shortest first."""
        for i in self._range(self.by_label, query):
            yield self._entry(self.by_label[i])

    def word_prefix(self, query: str) -> Iterator[int]:
        """Entries with a later word that starts with `query`."""
        for i in self._range(self.by_word, query):
            yield self._entry(self.by_word[i])


class TypeaheadIndex:
    """Entries of every kind, looked up by prefix (see the module docstring for the order)."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        by_kind: dict[str, list[Entry]] = {kind: [] for kind in KINDS}
        for entry in entries:
            if normalize(entry.label):
                by_kind[entry.kind].append(entry)
        self.columns = [(_Column(by_kind[kind])) for kind in KINDS]
        self.size = sum(len(c.entries) for c in self.columns)

    def lookup(self, query: str, limit: int = 10) -> list[Entry]:
        """Up to `limit` entries for what has been typed so far, best first, no repeats."""
        wanted = normalize(query)
        out: list[Entry] = []
        if not wanted or limit <= 0:
            return out
        seen: set[tuple[str, str | None]] = set()
        for tier in ("exact", "label_prefix", "word_prefix"):
            for column in self.columns:
                for index in getattr(column, tier)(wanted):
                    entry = column.entries[index]
                    place = (entry.name, entry.anchor)
                    if place in seen:
                        continue
                    seen.add(place)
                    out.append(entry)
                    if len(out) >= limit:
                        return out
        return out
