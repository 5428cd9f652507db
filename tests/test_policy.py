"""Freshness decisions, table-driven with the clock passed in."""

from __future__ import annotations

import pytest

from mirror.models import CachedDocument, Document
from mirror.policy import (
    Action,
    Freshness,
    Mode,
    OnFailure,
    action_for,
    freshness,
    keeps_stored,
    newer,
    on_failure,
    plan,
)

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


# -- plans: every row of the table in mirror/policy.py ----------------------------------------

ONLINE, OFFLINE = Mode(), Mode(offline=True)


@pytest.mark.parametrize(
    ("verdict", "mode", "action"),
    [
        (Freshness.FRESH, ONLINE, Action.SERVE_CACHED),
        (Freshness.FRESH, OFFLINE, Action.SERVE_CACHED),
        (Freshness.STALE, ONLINE, Action.FETCH),
        (Freshness.STALE, OFFLINE, Action.SERVE_STALE),
        (Freshness.MISSING, ONLINE, Action.FETCH),
        (Freshness.MISSING, OFFLINE, Action.NOT_CACHED),
    ],
)
def test_action_for_every_verdict_and_mode(verdict, mode, action) -> None:  # type: ignore[no-untyped-def]
    assert action_for(verdict, mode) is action


def test_plan_keeps_request_order_once_per_name_and_applies_the_mode() -> None:
    fresh, old = cached(10), cached(10**6)
    names = ["documents/a.com/old", "documents/a.com/fresh", "documents/a.com/none"]
    held = {names[0]: old, names[1]: fresh}
    decided = plan([*names, names[0]], held, Mode(max_age=3600), now=NOW)
    assert list(decided.actions) == names
    assert decided.to_fetch == [names[0], names[2]]
    assert decided.names(Action.SERVE_CACHED) == [names[1]]
    offline = plan(names, held, Mode(offline=True, max_age=3600), now=NOW)
    assert [offline.actions[n] for n in names] == [
        Action.SERVE_STALE,
        Action.SERVE_CACHED,
        Action.NOT_CACHED,
    ]
    # refresh makes every copy stale, whatever its age.
    assert plan(names[1:2], held, Mode(refresh=True), now=NOW).to_fetch == names[1:2]


@pytest.mark.parametrize(
    ("held", "not_found", "decision"),
    [
        ("all", False, OnFailure.SERVE_STALE),  # stale-if-error
        ("all", True, OnFailure.RAISE),  # upstream says it is gone: an answer, not an outage
        ("some", False, OnFailure.RAISE),  # a name with no copy cannot be served
        ("metadata", False, OnFailure.RAISE),  # a metadata-only row is no copy
        ("none", False, OnFailure.RAISE),
    ],
)
def test_on_failure(held: str, not_found: bool, decision: OnFailure) -> None:
    names = ["documents/a.com/x", "documents/a.com/y"]
    copies = {
        "all": {n: cached(10) for n in names},
        "some": {names[0]: cached(10)},
        "metadata": {names[0]: cached(10), names[1]: cached(10, content=None)},
        "none": {},
    }[held]
    assert on_failure(names, copies, not_found=not_found) is decision


OLD, NEW = "2025-01-01T00:00:00Z", "2026-01-01T00:00:00.5+00:00"


@pytest.mark.parametrize(
    ("stored", "incoming", "keep"),
    [
        (None, OLD, False),  # nothing stored
        (cached(0, content=None, updated=NEW), OLD, False),  # a metadata-only row
        (cached(0, updated=None), OLD, False),  # the stored copy has no updateTime
        (cached(0, updated=NEW), OLD, True),  # the stored copy is newer
        (cached(0, updated=NEW), None, True),  # no updateTime never replaces one
        (cached(0, updated=OLD), NEW, False),  # the incoming copy is newer
        (cached(0, updated=OLD), "2025-01-01T00:00:00.000Z", False),  # the same instant
    ],
)
def test_keeps_stored(stored, incoming, keep) -> None:  # type: ignore[no-untyped-def]
    assert keeps_stored(stored, incoming) is keep
