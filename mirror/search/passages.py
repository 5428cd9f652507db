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
# The share of the best-passage score in a page's new score (the rest: the index's). Above
# half, so that of two pages each best on one score, the one whose passage holds the question
# wins: the index's page score still counts each word by its best field, so a title word
# weighs there as much as a body sentence holding most of the question. On
# bench/data/questions.json's dev half (with PASSAGE_POOL 20; hit@1 / hit@5 / MRR@10), 0.5 ->
# 0.6: lexical questions 0.63 / 0.85 / 0.74 -> 0.67 / 0.89 / 0.76, agent problems 0.64 / 0.73 /
# 0.66 -> 0.64 / 0.82 / 0.69, chrome hit@5 0.91 -> 0.94; hybrid questions 0.67 / 0.89 / 0.77
# -> 0.67 / 0.93 / 0.77, agent 0.55 / 0.82 / 0.65 -> 0.64 / 0.82 / 0.71, chrome hit@5 0.94 ->
# 0.95; other kinds unchanged. 0.7 did as well on the dev half but cost a paraphrase of
# tests/data/relevance.json its first place; 0.8 and more cost agent problems and keywords.
PASSAGE_WEIGHT = 0.6


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
