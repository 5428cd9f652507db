"""Best-passage re-ranking (mirror.search.passages): pure, on Markdown and word weights."""

from __future__ import annotations

from mirror.search import passages
from mirror.store.textindex.sqlite.entries import analyzer

ANALYZE = analyzer().analyze


def _stem(word: str) -> str | None:
    return next(iter(ANALYZE(word)), None)


def _scores(pages: list[str], weights: dict[str, float]) -> list[float]:
    return passages.best_passages(pages, weights, list(weights), _stem)


FILLER = "Unrelated prose about browsers and pages. " * 40


def _section(heading: str, text: str) -> str:
    # Each section big enough to be a chunk of its own (chunking.MIN_BYTES).
    return f"## {heading}\n\n{text}\n\n{FILLER}\n\n"


def test_a_page_scores_its_best_chunk_not_its_words_spread_over_chunks() -> None:
    together = _section("Quotas", "Estimate the storage quota left for offline data.")
    spread = (
        _section("One", "Estimate the cost.")
        + _section("Two", "Storage is cheap.")
        + _section("Three", "Offline first.")
    )
    words = {w: 1.0 for w in ANALYZE("estimate storage offline")}
    near, far, none = _scores([together, spread, FILLER], words)
    assert near > far > none == 0.0


def test_words_count_by_their_stem_not_by_a_prefix() -> None:
    # "database" starts with "data" but is another word.
    pages = [_section("A", "Data."), _section("B", "Database. Databases.")]
    counted, other = _scores(pages, {"data": 1.0})
    assert counted > 0 == other


def test_rarer_words_weigh_more() -> None:
    pages = [_section("A", "quota quota"), _section("B", "storage storage")]
    words = {"quota": 3.0, "storag": 0.5}
    quota, storage = _scores(pages, words)
    assert quota > storage > 0


def test_reordered_mixes_page_and_passage_scores() -> None:
    # The first page wins on the page score alone, the second has the passage.
    assert passages.reordered([10.0, 8.0, 1.0], [0.0, 5.0, 0.0]) == [1, 0, 2]
    # A far better page score stays ahead of a modest passage.
    assert passages.reordered([10.0, 1.0], [4.0, 5.0]) == [0, 1]
    # Ties keep the old order; nothing to score keeps it too.
    assert passages.reordered([2.0, 2.0], [1.0, 1.0]) == [0, 1]
    assert passages.reordered([0.0, 0.0], [0.0, 0.0]) == [0, 1]
    assert passages.reordered([], []) == []


def test_the_best_passage_outweighs_an_equal_lead_on_the_page_score() -> None:
    # Each page first on one score by the same margin: the page whose passage holds the
    # question wins (a title word lifts the page score, not the passage one).
    assert passages.reordered([10.0, 5.0], [5.0, 10.0]) == [1, 0]


def test_idf_is_never_negative() -> None:
    assert passages.idf(100, 100) > 0
    assert passages.idf(100, 1) > passages.idf(100, 50)
