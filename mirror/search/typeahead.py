"""Type-ahead over symbols, page titles and headings: prefix matches in microseconds, pure.

Each label is normalised (lower case, punctuation as spaces: `chrome.storage.local.get` reads
`chrome storage local get`) and written into one string per kind. Two sorted arrays of offsets
into that string answer a prefix with a binary search: one holds where each label starts, the
other where each later word starts. A keystroke is then a few bisections and a slice, however
many pages there are, and the index costs about the labels' own bytes plus 4 per word.

Several typed words match successive words that each start with one ("servic wor" finds
"Service worker lifecycle": the reader is half-way through each word). The run is found by
bisection too: within the range of the first typed word, every distinct completion of it
("service", "services") is a contiguous block sorted by what follows, so each completion costs
one more bisection for the next typed word, not a scan of the labels under it. A first word
of a letter or two has thousands of completions, though; then the labels that the rarest
later typed word begins a word of are checked instead, whichever costs less (_Column._matches).

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
_WORD_END = re.compile(f"[ {_SEP}]")


def _word_end(text: str, at: int) -> int:
    """Where the word running through `at` ends (the text ends with _SEP: always found)."""
    found = _WORD_END.search(text, at)
    return found.start() if found else len(text)


# A walk to the next completion of a typed word (three bisections) costs about as much as
# checking this many labels' words directly (_Column._matches; measured on bench_typeahead's
# store: ~5 us against ~1.3 us).
_STEP = 4


class _OverBudget(Exception):
    """A several-word lookup walked as many completions as checking words would cost."""


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
        # Sorted by the rest of the label from each offset; the key is computed once per
        # offset while sorting, never kept.
        self.by_label = array("I", sorted(starts, key=self._key))
        self.by_word = array("I", sorted(words, key=self._key))

    def _range(self, offsets: array[int], query: str, lo: int = 0, hi: int | None = None) -> range:
        text, n = self.text, len(query)
        hi = len(offsets) if hi is None else hi

        def key(o: int) -> str:
            return text[o : o + n]

        return range(
            bisect_left(offsets, query, lo, hi, key=key),
            bisect_right(offsets, query, lo, hi, key=key),
        )

    def _runs(
        self, offsets: array[int], words: list[str], found: range, typed: str, budget: list[int]
    ) -> Iterator[int]:
        """Offsets (in the order of `offsets`) whose text goes on, after `typed`, as successive
        words starting with `words`; `found`: the positions whose text starts with `typed`
        and the first of them. Each completion of a typed word spends one of `budget`;
        _OverBudget when none is left."""
        if len(words) == 1:
            for i in found:
                yield offsets[i]
            return
        text, first, second = self.text, words[0], words[1]
        at = found.start
        while at < found.stop:
            budget[0] -= 1
            if budget[0] < 0:
                raise _OverBudget
            # The block of one completion of `first` ("servic" -> "service"), then the next.
            start = offsets[at] + len(typed)
            word = text[start : _word_end(text, start + len(first))]
            block = typed + word + " "
            inner = self._range(offsets, block + second, at, found.stop)
            if inner:
                yield from self._runs(offsets, words[1:], inner, block, budget)
            # Past this completion: its labels that end there ("\n" sorts before " ") and
            # those that go on; the next completion ("services") sorts after both.
            n = len(block)
            after = bisect_right(
                offsets, block, max(at + 1, inner.stop), found.stop, key=lambda o: text[o : o + n]
            )
            at = max(after, at + 1)

    def _anchored(self, words: list[str], *, at_start: bool) -> list[int]:
        """The offsets of the runs `_runs` finds (labels' starts if `at_start`, else later
        words'), in its order, found instead from the typed word after the first that the
        fewest words start with: each such word is checked against its label's words."""
        text = self.text
        ranges = [self._range(self.by_word, w) for w in words[1:]]
        j = min(range(len(ranges)), key=lambda k: len(ranges[k])) + 1
        found: list[tuple[str, int]] = []
        for i in ranges[j - 1]:
            o = self.by_word[i]
            begin = self.starts[self._entry(o)]
            before = text[begin : o - 1].split(" ")  # the words of the label before o's
            first = len(before) - j  # where the run would start
            if first < 0 or (first == 0) != at_start:
                continue
            stop = text.index(_SEP, o)
            label = [*before, *text[o:stop].split(" ")]
            if len(label) - first < len(words):
                continue
            if all(label[first + k].startswith(w) for k, w in enumerate(words)):
                run = begin + sum(len(w) + 1 for w in before[:first])
                found.append((text[run:stop], run))
        return [run for _, run in sorted(found)]

    def _matches(self, offsets: array[int], query: str) -> Iterator[int]:
        words = query.split(" ")
        if len(words) == 1:
            for i in self._range(offsets, query):
                yield offsets[i]
            return
        rarest = min(len(self._range(self.by_word, w)) for w in words[1:])
        if rarest == 0:
            return  # a typed word that begins no word at all: nothing can match
        # Walking completions stops at the caller's limit, but a short first word ("c d")
        # has thousands of them; checking every word that the rarest later typed word
        # begins costs about a completion's bisections per _STEP words. So the walk goes on
        # while it has cost less than those checks would, then the checks find the rest:
        # never much more than twice the cheaper of the two.
        budget = [rarest // _STEP]
        last = -1
        try:
            for o in self._runs(offsets, words, self._range(offsets, words[0]), "", budget):
                last = o
                yield o
            return
        except _OverBudget:
            pass
        done = (self._key(last), last) if last >= 0 else None
        for o in self._anchored(words, at_start=offsets is self.by_label):
            if done is None or (self._key(o), o) > done:
                yield o

    def _key(self, offset: int) -> str:
        """What `offsets` are sorted by: the label from `offset` on."""
        return self.text[offset : self.text.index(_SEP, offset)]

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
        """Entries whose label starts with `query`'s words, shortest first."""
        for o in self._matches(self.by_label, query):
            yield self._entry(o)

    def word_prefix(self, query: str) -> Iterator[int]:
        """Entries with a later word from which on the words start with `query`'s."""
        for o in self._matches(self.by_word, query):
            yield self._entry(o)


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
