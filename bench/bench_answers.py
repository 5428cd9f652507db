"""Offline answers: how often an answer's first citation is a page that answers the question,
beside the hit@1 of the search ranking it quotes from, per half and kind, in one run.

Usage: python -m bench.bench_answers [--corpus DIR] [--no-semantic] [--json] [--misses HALF]

The questions are bench/data/questions.json (bench_questions.py: tune on the dev half only,
score the test half when a change is done). One store of the whole shared corpus is built;
every question is answered offline (mirror.service.answers.answer, the extractive answer of
`dk-mirror answer --offline`) with the lexical ranking, then again after the semantic index is
built (`dk-mirror index update`) with the hybrid one. Columns:
- answer@1: the answer's first citation is an expected page;
- search@1: the first page of the ranking the answer quotes from is one (search's hit@1);
- cited@3: some citation of the answer is an expected page.
answer@1 below search@1 means answers skip the page search put first.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mirror.config import Settings
from mirror.errors import MirrorError
from mirror.policy import Mode
from mirror.service import answers, semantic
from mirror.service.context import Context
from mirror.store.store import Store

from .bench_questions import GROUPS, Question, corpus_documents, load_questions, print_halves
from .common import add_corpus_option

OFFLINE = Mode(offline=True)
Row = tuple[bool, bool, bool]  # answer@1, search@1, cited@3


def _no_upstream() -> Any:
    raise RuntimeError("the answers bench runs offline")


def score(ctx: Context, question: Question) -> tuple[Row, list[str]]:
    """Whether the answer's first citation, the ranking's first page and any citation are
    expected pages; and the cited pages."""
    first = answers.ranked(ctx, question.text, None)[:1]
    result = answers.answer(ctx, question.text, filter_text=None, mode=OFFLINE)
    cited = result.answer.reference_names
    expected = question.expected
    row = (
        bool(cited) and cited[0] in expected,
        bool(first) and first[0].name in expected,
        any(name in expected for name in cited),
    )
    return row, cited


def summary(rows: Sequence[Row]) -> dict[str, float]:
    """The share of questions each column holds for."""
    n = len(rows) or 1
    return {
        "answer@1": round(sum(r[0] for r in rows) / n, 3),
        "search@1": round(sum(r[1] for r in rows) / n, 3),
        "cited@3": round(sum(r[2] for r in rows) / n, 3),
        "queries": len(rows),
    }


def table(questions: Sequence[Question], tiers: dict[str, list[Row]]) -> dict:
    """Figures by half ("dev", "test"), group and tier."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for half in ("dev", "test"):
        for group, member in GROUPS.items():
            idx = [i for i, q in enumerate(questions) if q.half == half and member(q)]
            out.setdefault(half, {})[group] = {
                tier: summary([rows[i] for i in idx]) for tier, rows in tiers.items()
            }
    return out


def main() -> None:
    """Print answer@1 / search@1 / cited@3 of every tier, by half and kind."""
    parser = argparse.ArgumentParser()
    add_corpus_option(parser)
    parser.add_argument("--no-semantic", action="store_true", help="skip the hybrid tier")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--misses",
        choices=("dev", "test"),
        help="list this half's questions whose answer does not cite an expected page first",
    )
    parser.add_argument(
        "--batch", type=int, help="score only this batch of questions.md (as bench_questions)"
    )
    args = parser.parse_args()
    questions = [q for q in load_questions() if args.batch in (None, q.batch)]
    tiers: dict[str, list[Row]] = {}
    misses: list[tuple[str, str, list[str]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'answers.sqlite3'}"
        store = Store.open(url)
        try:
            store.put(corpus_documents(args.corpus), fetched_at=0.0, upstream="answers")
            ctx = Context(Settings(db_url=url, offline=True), store, _no_upstream, time.time)
            for tier in ("lexical",) if args.no_semantic else ("lexical", "hybrid"):
                if tier == "hybrid":
                    try:
                        semantic.index(ctx)
                    except MirrorError as exc:  # the semantic extra is not installed
                        print(f"hybrid tier skipped: {exc.message}")
                        break
                rows = []
                for q in questions:
                    row, cited = score(ctx, q)
                    rows.append(row)
                    if args.misses == q.half and not row[0]:
                        misses.append((tier, q.text, cited))
                tiers[tier] = rows
        finally:
            store.close()
    results = table(questions, tiers)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return
    print(f"{len(questions)} questions; answer@1 / search@1 / cited@3 (answer --offline)")
    print_halves(results, "{answer@1:.2f} / {search@1:.2f} / {cited@3:.2f}", width=24)
    for tier, text, cited in misses:
        print(f"\nmiss ({tier}): {text}\n  cited: {cited}")


if __name__ == "__main__":
    main()
