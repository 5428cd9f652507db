"""Fusion of two document rankings (lexical and dense): pure, no I/O.

Two ways. Reciprocal rank fusion (Cormack et al. 2009) needs no score calibration between the
tiers: a document's fused score is the sum of 1 / (K + rank) over the rankings it appears in;
the bench's textbook baseline uses it. Score fusion (what hybrid search uses) mixes each
tier's own scores, each divided by its best: how far behind the first a page is counts, not
only its place, so a page the lexical tier finds far ahead of the rest keeps its lead, and a
close lexical race is decided by meaning. Chosen on bench/data/questions.json's dev half (see
LEXICAL_SHARE).
"""

from __future__ import annotations

from collections.abc import Sequence

# Smaller than the usual 60, so the first few places of each tier count most: measured on
# tests/data/relevance_semantic.json, hybrid hit@5 0.96 with K=10, 0.88 with 30 or 60; on
# bench/data/questions.json's dev half (100 deep each, dense weighted 0.3) 10 is still best.
K = 10


def reciprocal_rank_fusion(
    *rankings: Sequence[str], k: int = K, weights: Sequence[float] | None = None
) -> list[tuple[str, float]]:
    """Names from every ranking (each best first, repeats ignored), by fused score in [0, 1]
    (1: first in every ranking); ties keep the order of first appearance. `weights` scale each
    ranking's share (default: 1 each)."""
    shares = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(shares) != len(rankings):
        raise ValueError("one weight per ranking")
    scores: dict[str, float] = {}
    for ranking, share in zip(rankings, shares, strict=True):
        for rank, name in enumerate(dict.fromkeys(ranking)):
            scores[name] = scores.get(name, 0.0) + share / (k + rank + 1)
    best = sum(shares) / (k + 1) if rankings else 1.0
    ordered = sorted(scores.items(), key=lambda item: -item[1])  # stable: ties keep order
    return [(name, score / best) for name, score in ordered]


# The lexical tier's share of a fused score (the dense tier's: the rest). On the dev half
# (hit@1 / hit@5 / MRR@10, English queries fused; identifiers and other languages are not):
# RRF k 10, dense weight 0.5 (before): questions 0.59 / 0.93 / 0.73, agent problems
# 0.45 / 0.73 / 0.57, all 0.71 / 0.94 / 0.81; the best RRF (k 5, weight 0.3) 0.63 / 0.93 /
# 0.75, 0.55 / 0.64 / 0.61, 0.73 / 0.92 / 0.82. Score fusion, 0.8: 0.67 / 0.89 / 0.77,
# 0.55 / 0.82 / 0.65, 0.77 / 0.94 / 0.84 (0.7 to 0.85 all within a query of it; min-max
# scaling instead of dividing by the best, or the index's [0, 1] scores instead of its BM25
# sums, did worse: all MRR@10 0.80 to 0.83).
# With 192-piece page vectors (mirror.semantic.model.MAX_TOKENS) the dense tier finds more,
# and its share was measured again on the dev half grown to 184 queries (a fifth batch of
# paraphrases, written without the page's title, heading or feature words), the whole local
# ranking, on all MRR@10: 0.8 0.80 / 0.93 / 0.856, 0.75 0.80 / 0.94 / 0.859, 0.7 0.80 /
# 0.94 / 0.860, 0.65 0.81 / 0.94 / 0.864, 0.6 0.80 / 0.95 / 0.860. 0.65 won on the dev half
# (paraphrases 0.48 / 0.69 / 0.59 -> 0.55 / 0.72 / 0.64), and lost on the test half, scored
# once: agent problems 0.82 / 0.95 / 0.88 -> 0.78 / 0.88 / 0.82 (below the hit@5
# 0.90), paraphrases unchanged, all 0.75 / 0.93 / 0.83 -> 0.76 / 0.92 / 0.83. A gain on
# 29 paraphrases that did not carry: 0.8 stays. Dense PRF (the query's vector moved toward
# its first pages') did not help on the dev half either. Nor did showing the dense ranking's
# first page by place 3 when the mixed scores bury it (absent from the lexical ranking, it
# scores at most the 0.2 share): dev all 0.80 / 0.93 / 0.856 -> 0.80 / 0.95 / 0.860 (agent
# problems hit@5 0.94 -> 1.00), test 0.75 / 0.94 / 0.83 -> 0.75 / 0.93 / 0.83 (questions
# hit@5 1.00 -> 0.96, agent problems and paraphrases the same). Nor a share that follows the
# lexical ranking's confidence (0.6 + 0.2 x how far its first page stands above its 10th,
# chosen on a dev grid that also tried the dense tier's confidence, z-scores and min-max
# scaling): dev all MRR@10 0.856 -> 0.864, test agent problems 0.82 / 0.95 / 0.88 -> 0.78 /
# 0.88 / 0.83 and paraphrases hit@5 0.62 -> 0.57, as with the fixed 0.65. Only 4 of the 29
# dev paraphrases have their page outside the lexical 100: dev cannot choose a share for it.
LEXICAL_SHARE = 0.8


def score_fusion(
    lexical: Sequence[tuple[str, float]],
    dense: Sequence[tuple[str, float]],
    *,
    lexical_share: float = LEXICAL_SHARE,
) -> list[tuple[str, float]]:
    """Names from both rankings (each best first, as (name, score): the lexical tier's
    relevance, higher is better; the dense tier's cosine), by `lexical_share` of the lexical
    score plus the rest of the dense one, each divided by its ranking's best (a page missing
    from a ranking scores 0 there), in [0, 1]; ties keep the order of first appearance. A
    lexical score above the one before it counts as that one: the lexical order is the
    index's verdict (a page topped up from a looser match never outranks one with every
    term), its scores only say by how much."""
    if not 0.0 <= lexical_share <= 1.0:
        raise ValueError(f"lexical_share must be in [0, 1], not {lexical_share}")
    scores: dict[str, float] = {}
    for ranking, share in (
        (_monotonic(lexical), lexical_share),
        (_first(dense), 1 - lexical_share),
    ):
        best = max((score for _, score in ranking), default=0.0)
        for name, score in ranking:
            part = share * max(score, 0.0) / best if best > 0 else 0.0
            scores[name] = scores.get(name, 0.0) + part
    return sorted(scores.items(), key=lambda item: -item[1])  # stable: ties keep order


def _first(ranking: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Each name once, where (and with the score) it first appears."""
    seen: dict[str, float] = {}
    for name, score in ranking:
        seen.setdefault(name, score)
    return list(seen.items())


def _monotonic(ranking: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Each name once, its score capped by the scores before it."""
    out: list[tuple[str, float]] = []
    cap = float("inf")
    for name, score in _first(ranking):
        cap = min(cap, score)
        out.append((name, cap))
    return out
