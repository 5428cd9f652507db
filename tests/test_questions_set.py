"""The held-out question set (bench/data/questions.json): big enough, every kind in both
halves, and the halves fixed by the query text alone (bench/data/questions.md)."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

from bench.bench_questions import SET, load_questions

KINDS = {"question", "agent", "other-language", "keyword", "identifier", "typo"}


def test_the_set_has_every_kind_in_both_halves() -> None:
    questions = load_questions()
    assert len(questions) >= 150
    assert len({q.text for q in questions}) == len(questions)
    halves = Counter((q.kind, q.half) for q in questions)
    assert {kind for kind, _ in halves} == KINDS
    assert all(halves[kind, half] >= 2 for kind in KINDS for half in ("dev", "test"))
    assert {q.corpus for q in questions} == {"chrome", "tensorflow"}
    languages = Counter(
        q["language"] for q in json.loads(SET.read_text())["queries"] if "language" in q
    )
    assert set(languages) == {"ja", "ko", "zh", "es", "pt"}


def test_a_query_half_depends_on_its_text_only() -> None:
    for q in load_questions():
        odd = hashlib.sha256(q.text.encode("utf-8")).digest()[0] % 2
        assert q.half == ("test" if odd else "dev")
