"""The frontier's rules: states, breadth-first order, depth and size limits, batches."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .scope import Scope


class State(StrEnum):
    """Where a name in the frontier stands; every state but QUEUED is final for this pass."""

    QUEUED = "queued"
    FETCHED = "fetched"  # fetched from upstream: new, or its content changed
    HAD = "had"  # the store held a fresh copy: not asked for
    UNCHANGED = "unchanged"  # fetched again (stale copy): same content
    MISSING = "missing"  # upstream does not have it (asked now, or remembered)
    FAILED = "failed"  # its batch still failed after retries; a rerun tries it again
    # Not asked for: the page it was found on had too many links in a row missing upstream
    # (crawl/broken.py); `crawl --follow-broken-links` asks for it.
    SKIPPED = "skipped"


DONE = tuple(s for s in State if s is not State.QUEUED)


@dataclass(frozen=True, slots=True)
class Limits:
    """How far a crawl goes: link hops from a seed (`max_depth`), names known (`max_docs`)."""

    max_depth: int | None = None
    max_docs: int | None = None

    def follows_links_from(self, depth: int) -> bool:
        """True if the links of a page at `depth` lead to pages the crawl may take."""
        return self.max_depth is None or depth < self.max_depth

    def room(self, known: int) -> int | None:
        """How many more names the frontier may take when it holds `known` (None: no bound)."""
        return None if self.max_docs is None else max(0, self.max_docs - known)


def children(
    linked: Iterable[str], depth: int, scope: Scope, limits: Limits, *, exclude: str = ""
) -> list[str]:
    """Names a page at `depth` adds to the frontier: in scope, within the depth, in link
    order, without repeats and without the page itself (`exclude`)."""
    if not limits.follows_links_from(depth):
        return []
    out = dict.fromkeys(n for n in linked if n != exclude and scope.contains(n))
    return list(out)


def admit(candidates: Sequence[str], known: int, limits: Limits) -> list[str]:
    """The new names the frontier takes: the first ones, up to `max_docs` in all."""
    room = limits.room(known)
    return list(candidates) if room is None else list(candidates[:room])


def batches(names: Sequence[str], size: int) -> Iterator[list[str]]:
    """`names` in order, `size` at a time."""
    for start in range(0, len(names), size):
        yield list(names[start : start + size])
