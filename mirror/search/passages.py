"""Best-passage re-ranking of a question's first pages, pure: no index, no database.

Why: the index scores a page as a whole, and each word by its best field (title, description,
headings, body). For a question of several words that lifts a page holding one or two of them
in its title above the page whose one section holds most of them; a bare FTS5 index with a row
per chunk ranked those questions better. So the first few pages of a long question are scored
again by their best chunk (BM25 over the chunks, the words stemmed as the index stems them,
weighted by the index's document frequencies), and ordered by an equal mix of the two scores,
each scaled to its best among those pages.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from .chunking import chunk_markdown

# BM25's usual constants, over chunks.
K1 = 1.2
B = 0.75
# The share of the best-passage score in a page's new score (the rest: the index's).
PASSAGE_WEIGHT = 0.5


def idf(documents: int, having: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1 + (documents - having + 0.5) / (having + 0.5))


def best_passages(
    contents: Sequence[str],
    words: Mapping[str, float],
    analyze: Callable[[str], list[str]],
) -> list[float]:
    """Each page's best chunk score: BM25 of `words` (stemmed word -> idf) over its chunks,
    heading and text, the average chunk length taken over all these pages' chunks."""
    pages = [
        [Counter(analyze(f"{c.heading} {c.text}")) for c in chunk_markdown(content)]
        for content in contents
    ]
    lengths = [c.total() for chunks in pages for c in chunks]
    average = (sum(lengths) / len(lengths)) if lengths else 1.0
    average = average or 1.0
    best: list[float] = []
    for chunks in pages:
        top = 0.0
        for counts in chunks:
            norm = K1 * (1 - B + B * counts.total() / average)
            score = sum(
                weight * f * (K1 + 1) / (f + norm)
                for word, weight in words.items()
                if (f := counts.get(word, 0))
            )
            top = max(top, score)
        best.append(top)
    return best


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
