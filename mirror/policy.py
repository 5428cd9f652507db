"""Freshness: whether a cached copy may be served. Pure functions; the clock is passed in."""

from __future__ import annotations

from enum import StrEnum

from .models import CachedDocument
from .timestamps import instant_key


class Freshness(StrEnum):
    """What the cache holds for one name."""

    FRESH = "fresh"  # serve it
    STALE = "stale"  # refetch; serve only if upstream fails (stale-if-error) or offline
    MISSING = "missing"  # no content cached: must fetch


def newer(candidate: str | None, than: str | None) -> bool:
    """True when RFC 3339 time `candidate` is later than `than` (unknown never counts as newer)."""
    if not candidate or not than:
        return False
    a, b = instant_key(candidate), instant_key(than)
    return a is not None and b is not None and a > b


def freshness(
    cached: CachedDocument | None, *, now: float, max_age: float | None, refresh: bool = False
) -> Freshness:
    """Judge one cached copy: missing, stale (too old, refresh asked, newer upstream), or fresh."""
    if cached is None or cached.document.content is None:
        return Freshness.MISSING
    if refresh:
        return Freshness.STALE
    if newer(cached.seen_update_time, cached.document.update_time):
        return Freshness.STALE
    if max_age is not None and now - cached.fetched_at > max_age:
        return Freshness.STALE
    return Freshness.FRESH
