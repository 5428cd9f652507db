"""Freshness decisions, table-driven with the clock passed in."""

from __future__ import annotations

import pytest

from mirror.models import CachedDocument, Document
from mirror.policy import Freshness, freshness, newer

NOW = 1_000_000.0


def cached(age: float, *, content: str | None = "x", updated=None, seen=None) -> CachedDocument:  # type: ignore[no-untyped-def]
    doc = Document(name="documents/a.com/x", content=content, update_time=updated)
    return CachedDocument(doc, None, NOW - age, "test", seen_update_time=seen)


@pytest.mark.parametrize(
    ("copy", "max_age", "refresh", "expected"),
    [
        (None, None, False, Freshness.MISSING),
        (cached(0, content=None), None, False, Freshness.MISSING),
        (cached(10**9), None, False, Freshness.FRESH),
        (cached(100), 200, False, Freshness.FRESH),
        (cached(300), 200, False, Freshness.STALE),
        (cached(0), None, True, Freshness.STALE),
        (
            cached(0, updated="2026-01-01T00:00:00Z", seen="2026-02-01T00:00:00Z"),
            None,
            False,
            Freshness.STALE,
        ),
        (
            cached(0, updated="2026-02-01T00:00:00Z", seen="2026-01-01T00:00:00Z"),
            None,
            False,
            Freshness.FRESH,
        ),
    ],
)
def test_freshness(copy, max_age, refresh, expected) -> None:  # type: ignore[no-untyped-def]
    assert freshness(copy, now=NOW, max_age=max_age, refresh=refresh) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("2026-01-02T00:00:00Z", "2026-01-01T00:00:00Z", True),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000Z", False),
        ("2026-01-01T01:00:00+01:00", "2026-01-01T00:00:00Z", False),
        (None, "2026-01-01T00:00:00Z", False),
        ("garbage", "2026-01-01T00:00:00Z", False),
    ],
)
def test_newer(a, b, expected) -> None:  # type: ignore[no-untyped-def]
    assert newer(a, b) is expected
