"""Held-out questions: hit@1, hit@5 and MRR@10 per half, kind and corpus, beside baselines.

Usage: python -m bench.bench_questions [--corpus DIR] [--no-semantic] [--json] [--misses HALF]
                                      [--tier NAME] [--below RANK] [--batch N]

The set is bench/data/questions.json (written and judged by bench/data/questions.md): queries
over the whole shared corpus (chrome en, chrome in other languages, tensorflow; 2,774 pages in
one store), split into a dev half (tune on it) and a test half (score it when a change is done)
by a hash of the query text. Every tier ranks documents (results grouped by page), all built in
this run from the same pages:
- dk-mirror lexical: Store.rank_documents, the ranking of the default install;
- dk-mirror hybrid: mirror.service.ranking.local_ranking, what `search --offline` shows (the
  dense tier fused in, vectors built here);
- bare FTS5 porter: one FTS5 row per chunk, porter stemming, an OR of the query's words;
- bm25s: bm25s with a Snowball stemmer (English stop words), when bm25s is installed;
- BM25 + dense RRF: the bare FTS5 ranking and the semantic extra's dense ranking, 100 deep
  each, fused by reciprocal rank fusion with k=60 (the textbook combination).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mirror.models import Document
from mirror.records import read_documents
from mirror.search.chunking import chunk_markdown
from mirror.search.fusion import reciprocal_rank_fusion

from .bench_relevance import DEPTH, corpus_store, hybrid, lexical
from .common import add_corpus_option, corpus_file

SET = Path(__file__).resolve().parent / "data" / "questions.json"
FILES = (
    "developer.chrome.com-en.jsonl.gz",
    "developer.chrome.com-intl.jsonl.gz",
    "tensorflow.org.jsonl.gz",
)
POOL = 100  # how deep each list of a fused baseline goes

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Question:
    """One query of the set: its kind, text, the pages that answer it, and its half."""

    kind: str
    text: str
    expected: frozenset[str]
    # Which batch of questions.md wrote it: 2 to 5 were written blind, after the ranking was
    # tuned.
    batch: int = 1

    @property
    def half(self) -> str:
        """ "test" when the first byte of SHA-256(text) is odd, else "dev": fixed by the text
        alone, so adding a query never moves another one across."""
        return "test" if hashlib.sha256(self.text.encode("utf-8")).digest()[0] % 2 else "dev"

    @property
    def corpus(self) -> str:
        """Which corpus the query is about (its first expected page's site)."""
        return (
            "tensorflow" if min(self.expected).startswith("documents/www.tensorflow") else "chrome"
        )


def load_questions(path: Path = SET) -> list[Question]:
    """The questions of the set."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Question(
            q["kind"],
            q["query"],
            frozenset("documents/" + e for e in q["expected"]),
            q.get("batch", 1),
        )
        for q in data["queries"]
    ]


def corpus_documents(directory: str | None = None) -> list[Document]:
    """Every page of the shared corpus."""
    return [doc for name in FILES for doc in read_documents(corpus_file(name, directory))]


class BareFTS:
    """Bare SQLite FTS5, porter stemming: one row per chunk (title and description on each),
    queried with an OR of the query's words, ranked by bm25, documents in the order their
    best chunk appears."""

    def __init__(self, path: Path, docs: Sequence[Document]) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute(
            "CREATE VIRTUAL TABLE bare USING fts5(name UNINDEXED, title, description, heading, "
            "body, tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        self.conn.executemany(
            "INSERT INTO bare VALUES (?, ?, ?, ?, ?)",
            (
                (doc.name, doc.title, doc.description, chunk.heading, chunk.text)
                for doc in docs
                for chunk in chunk_markdown(doc.content or "")
            ),
        )
        self.conn.commit()

    def rank(self, query: str, depth: int) -> list[str]:
        """The best `depth` documents for an OR of the query's words."""
        words = re.findall(r"\w+", query)
        if not words:
            return []
        match = " OR ".join('"' + w + '"' for w in words)
        rows = self.conn.execute(
            "SELECT name FROM bare WHERE bare MATCH ? ORDER BY bm25(bare) LIMIT ?",
            (match, depth * 20),
        )
        return list(dict.fromkeys(name for (name,) in rows))[:depth]

    def __call__(self, query: str) -> list[str]:
        return self.rank(query, DEPTH)


def bm25s_ranker(docs: Sequence[Document]) -> Ranker | None:
    """bm25s over title, description and content, Snowball-stemmed; None when not installed."""
    try:
        import bm25s
        import Stemmer
    except ImportError:
        return None
    stemmer = Stemmer.Stemmer("english")
    names = [doc.name for doc in docs]
    texts = [f"{doc.title}\n{doc.description or ''}\n{doc.content or ''}" for doc in docs]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )

    def rank(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        found, scores = retriever.retrieve(tokens, k=DEPTH, show_progress=False)
        return [names[i] for i, s in zip(found[0], scores[0], strict=True) if s > 0]

    return rank


def fused_baseline(bare: BareFTS, dense: Callable[[str], list[str] | None]) -> Ranker:
    """BM25 (bare FTS5) and dense, POOL deep each, RRF k=60."""

    def rank(query: str) -> list[str]:
        near = dense(query) or []
        fused = reciprocal_rank_fusion(bare.rank(query, POOL), near, k=60)
        return [name for name, _ in fused[:DEPTH]]

    return rank


def positions(questions: Sequence[Question], rank: Ranker) -> list[int | None]:
    """Where each question's first expected page is in the ranker's top DEPTH (1-based)."""
    out: list[int | None] = []
    for q in questions:
        names = rank(q.text)[:DEPTH]
        out.append(next((i for i, n in enumerate(names, 1) if n in q.expected), None))
    return out


def summary(found: Sequence[int | None]) -> dict[str, float]:
    """hit@1, hit@5 and MRR@10 of a list of positions."""
    n = len(found) or 1
    return {
        "hit@1": round(sum(p == 1 for p in found) / n, 3),
        "hit@5": round(sum(p is not None and p <= 5 for p in found) / n, 3),
        "mrr@10": round(sum(1.0 / p for p in found if p) / n, 3),
        "queries": len(found),
    }


GROUPS: dict[str, Callable[[Question], bool]] = {
    "question": lambda q: q.kind == "question",
    "agent": lambda q: q.kind == "agent",
    # Asked in the user's own words, title words allowed (questions.md step 8).
    "asked": lambda q: q.kind == "asked",
    # What the user wants or sees, without the page's title, heading or feature words: the
    # vocabulary gap (questions.md step 9).
    "paraphrase": lambda q: q.kind == "paraphrase",
    "other-language": lambda q: q.kind == "other-language",
    "keyword": lambda q: q.kind == "keyword",
    "identifier": lambda q: q.kind == "identifier",
    "typo": lambda q: q.kind == "typo",
    "tensorflow": lambda q: q.corpus == "tensorflow",
    "chrome": lambda q: q.corpus == "chrome",
    "all": lambda q: True,
}


def table(questions: Sequence[Question], found: dict[str, list[int | None]]) -> dict:
    """Metrics by half ("dev", "test"), group and tier."""
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for half in ("dev", "test"):
        for group, member in GROUPS.items():
            idx = [i for i, q in enumerate(questions) if q.half == half and member(q)]
            out.setdefault(half, {})[group] = {
                tier: summary([pos[i] for i in idx]) for tier, pos in found.items()
            }
    return out


def print_halves(results: dict, cell: str, *, width: int) -> None:
    """The metrics of `table` as text: a block per half, a row per group, a column per tier,
    each cell `cell` formatted with the tier's metrics."""
    for half, groups in results.items():
        print(f"\n{half} half")
        tiers = next(iter(groups.values()))
        print(f"{'':20}" + "".join(f"{name:>{width}}" for name in tiers))
        for group, by_tier in groups.items():
            cells = "".join(f"{cell.format(**m):>{width}}" for m in by_tier.values())
            count = next(iter(by_tier.values()))["queries"]
            if not count:
                continue  # a --batch without this kind in this half
            print(f"{group + f' ({count})':20}{cells}")


# Every tier's name, as the table prints it (bm25s and the tiers with vectors may be absent).
TIERS = ("dk-mirror lexical", "dk-mirror hybrid", "bare FTS5 porter", "bm25s", "BM25 + dense RRF")


def build_tiers(folder: Path, corpus: str | None, semantic: bool) -> tuple[dict[str, Ranker], list]:
    """Every tier over one store of the corpus (and what keeps them open)."""
    docs = corpus_documents(corpus)
    keep: list = []
    cm = corpus_store(f"sqlite:///{folder / 'questions.sqlite3'}", docs)
    store = cm.__enter__()
    keep.append(cm)
    bare = BareFTS(folder / "bare.sqlite3", docs)
    tiers: dict[str, Ranker] = {"dk-mirror lexical": lexical(store)}
    fused = hybrid(store) if semantic else None
    if fused is not None:
        tiers["dk-mirror hybrid"] = fused
    tiers["bare FTS5 porter"] = bare
    by_bm25s = bm25s_ranker(docs)
    if by_bm25s is not None:
        tiers["bm25s"] = by_bm25s
    if fused is not None:
        from mirror.service.semantic import dense as dense_ranking

        def dense(query: str) -> list[str] | None:
            near = dense_ranking(store, query, limit=POOL)
            return [name for name, _ in near] if near is not None else None

        tiers["BM25 + dense RRF"] = fused_baseline(bare, dense)
    return tiers, keep


def main() -> None:
    """Print the table of every tier, by half and kind."""
    parser = argparse.ArgumentParser()
    add_corpus_option(parser)
    parser.add_argument("--no-semantic", action="store_true", help="skip the tiers with vectors")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--misses", choices=("dev", "test"), help="list this half's misses")
    parser.add_argument(
        "--half",
        choices=("dev", "test"),
        help="print this half only (tuning: --half dev keeps the test half unseen)",
    )
    parser.add_argument(
        "--tier",
        default="dk-mirror lexical",
        choices=TIERS,
        help="whose misses --misses lists (a tier's name as the table prints it)",
    )
    parser.add_argument(
        "--below",
        type=int,
        default=5,
        help="--misses lists the queries whose page is not in the first BELOW (1: not first)",
    )
    parser.add_argument(
        "--batch",
        type=int,
        help="score only this batch of questions.md (2 to 5: written blind after the ranking "
        "was tuned; 3 is the agent-heavy one; 4 is the asked kind, title words allowed; 5 is "
        "the paraphrase kind, no title or heading words)",
    )
    args = parser.parse_args()
    if args.half and args.misses and args.misses != args.half:
        parser.error(f"--misses {args.misses} lists the half that --half {args.half} hides")
    questions = [q for q in load_questions() if args.batch in (None, q.batch)]
    with tempfile.TemporaryDirectory() as tmp:
        tiers, keep = build_tiers(Path(tmp), args.corpus, not args.no_semantic)
        try:
            found = {name: positions(questions, rank) for name, rank in tiers.items()}
            misses = {}
            if args.misses:
                if args.tier not in tiers:
                    parser.error(f"--tier {args.tier!r} did not run here (bm25s or vectors off)")
                misses = {
                    f"{q.text} (at {p or '-'})": tiers[args.tier](q.text)[:3]
                    for q, p in zip(questions, found[args.tier], strict=True)
                    if q.half == args.misses and (p is None or p > args.below)
                }
        finally:
            for cm in keep:
                cm.__exit__(None, None, None)
    results = table(questions, found)
    if args.half:
        results = {args.half: results[args.half]}
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return
    print(f"{len(questions)} questions; hit@1 / hit@5 / MRR@10; results grouped by page")
    print_halves(results, "{hit@1:.2f} / {hit@5:.2f} / {mrr@10:.2f}", width=21)
    for text, top in misses.items():
        print(f"\nmiss ({args.tier}): {text}\n  top 3: {top}")


if __name__ == "__main__":
    main()
