"""The static site's full-text index, built here and read by site_assets/search.js.

Pagefind cannot run from `file://` (its loader is an ES module and it fetch()es its index,
both refused to a page opened from disk: Pagefind/pagefind#202), and the site must work from a
USB stick. So the index is plain JavaScript files that a page adds as `<script>` tags, which
browsers do load from disk:

    _dk/search/docs.js      dkSearch.docs([[path, title, host, description], ...], [key, ...])
    _dk/search/<key>.js     dkSearch.shard(key, {term: [doc, weight, doc, weight, ...], ...})

A term's shard is named by its first two characters (`shard_key`), so a query loads only the
shards of its words (docs.js lists the shards there are, so a word no page has asks for no
file), and a word being typed (a prefix of two or more characters) finds all its completions
in one shard. Documents are numbered in name order and every map is written with
sorted keys: the same pages give the same bytes.
"""

from __future__ import annotations

import html
import json
import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import PurePosixPath

from .base import OutFile

SEARCH_DIR = PurePosixPath("_dk", "search")
DOCS_FILE = SEARCH_DIR / "docs.js"
# A word is a run of letters, digits or `_` (JavaScript's [\p{L}\p{N}_] reads the same runs).
_WORD = re.compile(r"\w+")
_TAG = re.compile(r"<[^>]*>")
_HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.DOTALL)
MIN_WORD, MAX_WORD = 2, 40
# A word's weight in a page: how often it occurs (capped, so one long table cannot win every
# query), and more for a word of the title or a heading.
_MAX_COUNT, _TITLE, _HEADINGS = 20, 12, 4
_DESCRIPTION_CHARS = 160


def words(text: str) -> list[str]:
    """The indexed words of `text`, lower-cased, in order."""
    return [w for w in _WORD.findall(text.lower()) if MIN_WORD <= len(w) <= MAX_WORD]


def shard_key(word: str) -> str:
    """The file-name-safe shard of a word: its first two characters, a-z 0-9 kept, others as
    `_` + hex code point (search.js spells it the same way)."""
    return "".join(c if "a" <= c <= "z" or "0" <= c <= "9" else f"_{ord(c):x}" for c in word[:2])


def plain(markup: str) -> str:
    """Text of sanitised HTML (tags dropped, entities decoded)."""
    return html.unescape(_TAG.sub(" ", markup))


class SearchIndex:
    """Postings gathered page by page; `files()` writes them out."""

    def __init__(self) -> None:
        self._docs: list[list[str]] = []
        self._postings: dict[str, array[int]] = defaultdict(lambda: array("I"))

    def add(self, path: str, title: str, host: str, description: str, body_html: str) -> None:
        """Index one page (pages are added in name order)."""
        doc = len(self._docs)
        flat = " ".join(description.split())
        if len(flat) > _DESCRIPTION_CHARS:
            flat = flat[: _DESCRIPTION_CHARS - 1].rstrip() + "…"
        self._docs.append([path, title, host, flat])
        counts = Counter(words(plain(body_html)))
        bonus: Counter[str] = Counter()
        for heading in _HEADING.findall(body_html):
            for word in set(words(plain(heading))):
                bonus[word] = max(bonus[word], _HEADINGS)
        for word in set(words(title)):
            bonus[word] = _TITLE
        for word in sorted(counts.keys() | bonus.keys()):
            postings = self._postings[word]
            postings.append(doc)
            postings.append(min(counts[word], _MAX_COUNT) + bonus[word])

    def files(self) -> Iterator[OutFile]:
        """docs.js, then one shard file per key, in key order."""
        shards: dict[str, list[str]] = defaultdict(list)
        for word in self._postings:
            shards[shard_key(word)].append(word)
        yield OutFile(DOCS_FILE, _call("docs", self._docs, sorted(shards)))
        for key in sorted(shards):
            body = {w: self._postings[w].tolist() for w in sorted(shards[key])}
            yield OutFile(SEARCH_DIR / f"{key}.js", _call("shard", key, body))


def _call(function: str, *args: object) -> bytes:
    text = ",".join(
        json.dumps(a, ensure_ascii=False, separators=(",", ":"), sort_keys=True) for a in args
    )
    return f"dkSearch.{function}({text});\n".encode()
