"""The change classifier on pairs of real pages (tests/data/changes/, excerpts of the corpus)
edited the way Google's docs change: each pair's classes and signals as a reader expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirror.changes.classify import classify

PAIRS = Path(__file__).parent / "data" / "changes"
CASES = json.loads((PAIRS / "expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CASES, ids=[c["pair"] for c in CASES])
def test_a_real_page_edited_is_classified_as_a_reader_expects(case: dict) -> None:
    old = (PAIRS / f"{case['pair']}.old.md").read_text(encoding="utf-8")
    new = (PAIRS / f"{case['pair']}.new.md").read_text(encoding="utf-8")
    verdict = classify(old, new)
    assert list(verdict.classes) == case["classes"], verdict.summary
    # One signal per thing a reader must see, each saying what it is.
    assert [s.split(":")[0] if ":" in s else s for s in verdict.signals] == [
        s.split(":")[0] for s in case["signals"]
    ], verdict.signals
    assert verdict.summary and "\n" not in verdict.summary


def test_every_class_and_signal_kind_is_covered_by_a_pair() -> None:
    classes = {c for case in CASES for c in case["classes"]}
    assert classes == {"signal", "structure", "code", "text", "cosmetic"}
    signals = {s for case in CASES for s in case["signals"]}
    assert {"limit changed", "API version changed", "deprecation notice added",
            "deprecation notice removed", "warning notice added",
            "caution notice removed"} <= signals  # fmt: skip


def test_the_same_text_or_nothing_but_whitespace_is_cosmetic() -> None:
    page = "# T\n\nSome text.\n\n```\ncode\n```\n"
    assert classify(page, page).classes == ("cosmetic",)
    assert classify(page, page.replace("Some text.", "Some\ntext.  ")).classes == ("cosmetic",)


def test_a_summary_stays_one_short_line() -> None:
    old = "\n\n".join(f"## Section {i}\n\ntext" for i in range(40))
    verdict = classify(old, "# Nothing left\n")
    assert len(verdict.summary) <= 200 and verdict.summary.endswith("…")
