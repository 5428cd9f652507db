"""iter_fetch's search for missing names, on an in-memory upstream that counts its calls."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from mirror.errors import NotFound, QuotaExceeded
from mirror.models import Document, View
from mirror.upstream import MAX_BATCH
from mirror.upstream.batching import BatchOutcome, iter_fetch


class CountingUpstream:
    """batchGet semantics (atomic 404) over a set of known names; records every call."""

    label = "memory"

    def __init__(self, known: set[str], *, names_document: bool) -> None:
        self.known = known
        self.names_document = names_document
        self.calls: list[list[str]] = []

    def batch_get(self, names: Sequence[str], view: View = View.CONTENT) -> list[Document]:
        assert 0 < len(names) <= MAX_BATCH
        self.calls.append(list(names))
        missing = [n for n in names if n not in self.known]
        if missing:
            raise NotFound([missing[0]] if self.names_document else list(names))
        return [Document(name=n, content="x") for n in names]

    def close(self) -> None:
        pass


def make(n: int, missing_at: Sequence[int]) -> tuple[list[str], set[str]]:
    names = [f"documents/a.dev/{i}" for i in range(n)]
    return names, {name for i, name in enumerate(names) if i not in missing_at}


@pytest.mark.parametrize("names_document", [True, False])
@pytest.mark.parametrize(
    "missing_at",
    [(), (0,), (19,), (7,), (3, 4), (0, 19), (1, 5, 9, 13), tuple(range(20)), (10, 11, 12)],
)
def test_missing_names_are_found_exactly(missing_at: tuple[int, ...], names_document: bool) -> None:
    names, known = make(20, missing_at)
    upstream = CountingUpstream(known, names_document=names_document)
    (outcome,) = iter_fetch(upstream, names)
    assert outcome.missing == [names[i] for i in missing_at]
    assert [d.name for d in outcome.documents] == [n for n in names if n in known]
    k, n = len(missing_at), len(names)
    if names_document:
        assert len(upstream.calls) <= k + 1
    elif k:
        # Bisection: about 2k*log2(n/k) calls, never one per name when few are missing.
        assert len(upstream.calls) <= 1 + 2 * k * max(1, math.ceil(math.log2(n / k)))
    else:
        assert len(upstream.calls) == 1


@pytest.mark.parametrize("position", range(20))
def test_one_missing_name_anywhere_costs_a_logarithmic_number_of_calls(position: int) -> None:
    names, known = make(20, [position])
    upstream = CountingUpstream(known, names_document=False)
    (outcome,) = iter_fetch(upstream, names)
    assert outcome.missing == [names[position]]
    assert len(upstream.calls) <= 1 + 2 * math.ceil(math.log2(20))  # 11, not 20


def test_batches_of_twenty_in_order_and_one_outcome_each() -> None:
    names, known = make(47, [21, 46])
    upstream = CountingUpstream(known, names_document=True)
    outcomes = list(iter_fetch(upstream, names))
    assert [len(o.documents) + len(o.missing) for o in outcomes] == [20, 20, 7]
    assert [o.missing for o in outcomes] == [[], [names[21]], [names[46]]]
    assert [d.name for o in outcomes for d in o.documents] == [n for n in names if n in known]


def test_duplicates_are_fetched_once() -> None:
    names, known = make(3, [])
    upstream = CountingUpstream(known, names_document=True)
    (outcome,) = iter_fetch(upstream, [names[1], names[0], names[1], names[2], names[0]])
    assert [d.name for d in outcome.documents] == [names[1], names[0], names[2]]
    assert upstream.calls == [[names[1], names[0], names[2]]]


def test_nothing_to_fetch() -> None:
    upstream = CountingUpstream(set(), names_document=True)
    assert list(iter_fetch(upstream, [])) == []
    assert upstream.calls == []


def test_other_errors_propagate() -> None:
    class Exhausted(CountingUpstream):
        def batch_get(self, names: Sequence[str], view: View = View.CONTENT) -> list[Document]:
            raise QuotaExceeded("quota", status=429)

    with pytest.raises(QuotaExceeded):
        list(iter_fetch(Exhausted(set(), names_document=True), ["documents/a.dev/x"]))


def test_batch_outcome_defaults() -> None:
    assert BatchOutcome() == BatchOutcome(documents=[], missing=[])
