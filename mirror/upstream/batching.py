"""Fetch any number of names in batches of 20, finding exactly which ones upstream lacks."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..errors import NotFound
from ..models import Document, View
from .interface import MAX_BATCH, Upstream


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    """One batch's result: the documents found (request order) and the names upstream lacks."""

    documents: list[Document] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def iter_fetch(
    upstream: Upstream, names: Iterable[str], view: View = View.CONTENT
) -> Iterator[BatchOutcome]:
    """Yield one outcome per batch of at most 20 names, in request order (duplicates dropped)."""
    unique = list(dict.fromkeys(names))
    for start in range(0, len(unique), MAX_BATCH):
        yield fetch_batch(upstream, unique[start : start + MAX_BATCH], view)


def fetch_batch(
    upstream: Upstream, batch: Sequence[str], view: View = View.CONTENT
) -> BatchOutcome:
    """Fetch one batch; when it fails whole with 404, narrow down the missing names."""
    found: dict[str, Document] = {}
    missing: set[str] = set()

    def solve(part: list[str], known_bad: bool = False) -> bool:
        """Fetch `part` (skipping the call when it is known to fail); True if any is missing."""
        if not part:
            return False
        if known_bad and len(part) == 1:
            missing.add(part[0])  # its sibling succeeded, so this one is the culprit
            return True
        if not known_bad:
            try:
                docs = upstream.batch_get(part, view)
            except NotFound as err:
                named = [n for n in part if n in err.names]
                if len(part) == 1:
                    missing.add(part[0])
                    return True
                if 0 < len(named) < len(part):
                    # Upstream named the culprit(s): one more call for the rest, no search.
                    missing.update(named)
                    solve([n for n in part if n not in named])
                    return True
            else:
                found.update((d.name, d) for d in docs)
                return False
        # The part fails as a whole and upstream did not say why: halve it. If the left half
        # is complete, the right half must hold a missing name, so its own call is skipped.
        middle = len(part) // 2
        left_bad = solve(part[:middle])
        solve(part[middle:], known_bad=not left_bad)
        return True

    solve(list(batch))
    return BatchOutcome(
        documents=[found[n] for n in batch if n in found],
        missing=[n for n in batch if n in missing],
    )
