"""Best-passage re-ranking of a question's first pages, pure: no index, no database.

Why: the index scores a page as a whole, and each word by its best field (title, description,
headings, body). For a question of several words that lifts a page holding one or two of them
in its title above the page whose one section holds most of them; a bare FTS5 index with a row
per chunk ranked those questions better. So the first few pages of a long question are scored
again by their best chunk (BM25 over the chunks, each word weighted by the index's document
frequency of its stem), and ordered by an equal mix of the two scores, each scaled to its
best among those pages.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from .chunking import recent_chunks

# BM25's usual constants, over chunks.
K1 = 1.2
B = 0.75
# The word that starts at a position.
_WORD_AT = re.compile(r"\w+")
# The share of the best-passage score in a page's new score (the rest: the index's).
PASSAGE_WEIGHT = 0.5


def idf(documents: int, having: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1 + (documents - having + 0.5) / (having + 0.5))


def best_passages(
    contents: Sequence[str],
    weights: Mapping[str, float],
    prefixes: Sequence[str],
    stem: Callable[[str], str | None],
) -> list[float]:
    """Each page's best chunk score: BM25 of the query's words over its chunks (heading and
    text; lengths in words split at white space, the average taken over all these pages'
    chunks). `weights`: each stem of the query (as the index stems it) -> its idf;
    `prefixes`: what a word holding one of them starts with (the stem, the word as typed);
    `stem`: a word's stem. Only the words starting with a prefix are stemmed: tokenizing 15
    whole pages cost more than the whole search."""
    # A prefix that starts with another adds no word ("storage" after "storag").
    keys = sorted({p.casefold() for p in prefixes if p})
    keys = [k for i, k in enumerate(keys) if not any(k.startswith(o) for o in keys[:i])]
    if not keys:
        return [0.0] * len(contents)
    stems: dict[str, str | None] = {}

    def counted(word: str) -> str | None:
        if word not in stems:
            found = stem(word)
            stems[word] = found if found in weights else None
        return stems[word]

    pages: list[list[tuple[int, Counter[str]]]] = []
    for content in contents:
        chunks = []
        for chunk in recent_chunks(content):
            text = f"{chunk.heading}\n{chunk.text}".casefold()
            words = (counted(w) for w in _words_starting(text, keys))
            chunks.append((len(text.split()), Counter(w for w in words if w is not None)))
        pages.append(chunks)
    lengths = [length for chunks in pages for length, _ in chunks]
    average = max(sum(lengths) / len(lengths), 1.0) if lengths else 1.0
    best: list[float] = []
    for chunks in pages:
        top = 0.0
        for length, counts in chunks:
            norm = K1 * (1 - B + B * length / average)
            score = sum(weights[w] * f * (K1 + 1) / (f + norm) for w, f in counts.items())
            top = max(top, score)
        best.append(top)
    return best


def _words_starting(text: str, prefixes: Sequence[str]) -> list[str]:
    """The words of `text` that start with one of `prefixes`, each occurrence once. str.find
    per prefix scans in C; a regular expression of the alternatives cost 20 ms a megabyte."""
    found: dict[int, str] = {}
    for prefix in prefixes:
        at = text.find(prefix)
        while at >= 0:
            if (at == 0 or not _is_word(text[at - 1])) and at not in found:
                match = _WORD_AT.match(text, at)
                found[at] = match.group() if match else prefix
            at = text.find(prefix, at + len(prefix))
    return list(found.values())


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def reordered(page_scores: Sequence[float], passage_scores: Sequence[float]) -> list[int]:
    """The pages' indexes in their new order: by PASSAGE_WEIGHT of the passage score plus the
    rest of the page score, each divided by its largest; ties keep the old order."""
    page_top = max(page_scores, default=0.0) or 1.0
    passage_top = max(passage_scores, default=0.0) or 1.0
    mixed = [
        (1 - PASSAGE_WEIGHT) * page / page_top + PASSAGE_WEIGHT * passage / passage_top
        for page, passage in zip(page_scores, passage_scores, strict=True)
    ]
    return sorted(range(len(mixed)), key=lambda i: (-mixed[i], i))
