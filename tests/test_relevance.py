"""The relevance suite (tests/data/relevance.json): local search keeps its recorded quality.

Queries were written by reading pages of tests/data/corpus, in five kinds; bench/
bench_relevance.py prints the same figures for every tier. Here the lexical tier must reach
the levels recorded in the suite, per kind, and stay ahead of a bare FTS5 OR query over the
same pages (the design before migration 0007) overall.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.bench_relevance import (
    corpus_documents,
    corpus_store,
    lexical,
    load_suite,
    metrics,
    recorded,
    tiers,
)
from mirror.store.store import Store

SUITE = load_suite()
KINDS = sorted({q.kind for q in SUITE})


@pytest.fixture(scope="module")
def results(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, dict[str, dict[str, float]]]]:
    folder: Path = tmp_path_factory.mktemp("relevance")
    with tiers(folder, semantic=False) as rankers:
        yield {name: metrics(SUITE, rank) for name, rank in rankers.items()}


def test_the_suite_is_broad() -> None:
    assert len(SUITE) >= 60
    assert set(KINDS) == {
        "identifiers",
        "keywords",
        "other-languages",
        "paraphrase",
        "typos-plurals",
    }
    assert all(sum(q.kind == kind for q in SUITE) >= 12 for kind in KINDS)


@pytest.mark.parametrize("kind", [*KINDS, "all"])
def test_lexical_search_keeps_its_recorded_level(
    results: dict[str, dict[str, dict[str, float]]], kind: str
) -> None:
    got = results["lexical"][kind]
    floor = recorded()[kind]
    for metric in ("hit@1", "hit@5", "mrr@10"):
        assert got[metric] >= floor[metric], f"{kind} {metric}: {got[metric]} < {floor[metric]}"


def test_lexical_search_meets_the_target_and_beats_bare_fts5(
    results: dict[str, dict[str, dict[str, float]]],
) -> None:
    lexical, bare = results["lexical"], results["bare FTS5 OR"]
    assert lexical["all"]["hit@5"] >= 0.90
    assert lexical["all"]["mrr@10"] > bare["all"]["mrr@10"]
    for kind in KINDS:
        # Better in every kind; where the baseline is perfect, as good.
        got, base = lexical[kind]["mrr@10"], bare[kind]["mrr@10"]
        assert got > base or got == base == 1.0, (kind, got, base)


@pytest.fixture(scope="module")
def postgresql_store(postgres_server) -> Iterator[Store]:  # type: ignore[no-untyped-def]
    """A PostgreSQL store of the same corpus."""
    url = postgres_server.fresh_database()
    try:
        with corpus_store(url, corpus_documents()) as store:
            yield store
    finally:
        postgres_server.drop_database(url)


@pytest.fixture(scope="module")
def postgresql_results(postgresql_store: Store) -> dict[str, dict[str, float]]:
    """The lexical tier's metrics on PostgreSQL."""
    return metrics(SUITE, lexical(postgresql_store))


@pytest.mark.parametrize("kind", [*KINDS, "all"])
def test_lexical_search_on_postgresql_keeps_its_recorded_level(
    postgresql_results: dict[str, dict[str, float]], kind: str
) -> None:
    """PostgreSQL ranks with its own machinery (tsvector, ts_rank): its own recorded levels,
    and the issue's target of 0.90 hit@5 overall."""
    got = postgresql_results[kind]
    floor = recorded(backend="postgresql")[kind]
    for metric in ("hit@1", "hit@5", "mrr@10"):
        assert got[metric] >= floor[metric], f"{kind} {metric}: {got[metric]} < {floor[metric]}"
    assert postgresql_results["all"]["hit@5"] >= 0.90


def test_quality_on_postgresql_holds_when_the_common_match_plan_kicks_in(
    postgresql_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pg_search.COMMON lowered so this corpus's common words rank in head_words first."""
    from mirror.store.textindex.postgres import search as pg_search

    monkeypatch.setattr(pg_search, "COMMON", 20)
    got = metrics(SUITE, lexical(postgresql_store))
    floor = recorded(backend="postgresql")
    for kind in [*KINDS, "all"]:
        assert got[kind]["hit@5"] >= floor[kind]["hit@5"], (kind, got[kind], floor[kind])
