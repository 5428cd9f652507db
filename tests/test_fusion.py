"""Score fusion of the lexical and dense rankings (mirror.search.fusion.score_fusion)."""

from __future__ import annotations

import pytest

from mirror.search.fusion import LEXICAL_SHARE, reciprocal_rank_fusion, score_fusion


def test_a_lexical_lead_is_kept_where_rank_fusion_would_give_it_away() -> None:
    """The lexical tier finds `a` far ahead of the rest; the dense tier has it last. Rank
    fusion only sees places, and puts the dense tier's first (middling lexically) ahead;
    score fusion sees that `a` is the lexical tier's by a wide margin."""
    lexical = [("a", 30.0), ("b", 9.0), ("c", 8.5)]
    dense = [("b", 0.62), ("c", 0.61), ("a", 0.30)]
    by_rank = reciprocal_rank_fusion([n for n, _ in lexical], [n for n, _ in dense], k=5)
    assert by_rank[0][0] == "b"
    fused = score_fusion(lexical, dense)
    assert [n for n, _ in fused] == ["a", "b", "c"]


def test_a_close_lexical_race_is_decided_by_meaning() -> None:
    lexical = [("a", 10.0), ("b", 9.9)]
    dense = [("b", 0.7), ("a", 0.3)]
    assert [n for n, _ in score_fusion(lexical, dense)] == ["b", "a"]


def test_scores_are_shares_of_each_tier_s_best() -> None:
    fused = dict(
        score_fusion([("a", 10.0), ("b", 5.0)], [("c", 0.8), ("b", 0.4)], lexical_share=0.75)
    )
    assert fused["a"] == pytest.approx(0.75)  # first lexically, absent from the dense list
    assert fused["b"] == pytest.approx(0.75 * 0.5 + 0.25 * 0.5)
    assert fused["c"] == pytest.approx(0.25)


def test_a_lexical_score_never_counts_above_the_one_before_it() -> None:
    """`c` was topped up from a looser match (fewer of the query's terms) with a larger BM25
    sum than `b`: the index ranked it below, and fusion keeps that verdict."""
    fused = score_fusion([("a", 10.0), ("b", 4.0), ("c", 6.0)], [])
    assert [n for n, _ in fused] == ["a", "b", "c"]
    assert dict(fused)["c"] == pytest.approx(dict(fused)["b"])


def test_repeats_count_once_and_empty_or_negative_lists_score_nothing() -> None:
    fused = score_fusion([("a", 2.0), ("a", 9.0)], [("b", -0.1), ("a", -0.5)])
    assert fused == [("a", pytest.approx(LEXICAL_SHARE)), ("b", 0.0)]
    assert score_fusion([], []) == []
    with pytest.raises(ValueError, match=r"lexical_share must be in \[0, 1\]"):
        score_fusion([("a", 1.0)], [], lexical_share=1.5)
