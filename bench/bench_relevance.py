"""Relevance of local search: hit@1, hit@5 and MRR@10 per kind of query, per tier.

Usage: python -m bench.bench_relevance [--json] [--pg-url postgresql://USER@HOST:PORT/DB]

The suite is tests/data/relevance.json: queries written by reading pages of tests/data/corpus
(the 633-page subset a clone has), in five kinds (paraphrased questions, keywords, API
identifiers, typos and plurals, other languages), each with the page(s) that answer it.
Tiers, all built in this run from the same documents:
- lexical: dk-mirror's local search (Store.rank_documents, the ranking local search pages use);
- bare FTS5: the baseline, one own-content FTS5 row per chunk (unicode61, no stemming; title
  and description on every chunk, as before migration 0007), queried with an OR of the
  query's words, ranked by bm25, documents in the order their first chunk appears;
- lexical PostgreSQL (and hybrid PostgreSQL, with the extra): the same rankings on a
  PostgreSQL store (tsvector, ts_rank; vectors in doc_vectors), when a server is given
  (--pg-url or $DK_MIRROR_BENCH_PG_URL; a scratch database is made there);
- hybrid: the ranking `search --offline` shows (`mirror.service.ranking.local_ranking`: the
  dense tier fused in, API names' own pages first), with the vectors built here first.
tests/test_relevance.py fails when the lexical tier falls below the levels recorded in the
suite's `recorded` field (on PostgreSQL: `recorded_postgresql`); rerun this with --json to see
the figures to record.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirror.models import Document
from mirror.records import read_documents
from mirror.search.chunking import chunk_markdown
from mirror.store.store import Store

from .pg_scratch import add_pg_option, scratch_database

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "data" / "relevance.json"
CORPUS = ROOT / "tests" / "data" / "corpus"
DEPTH = 10  # MRR@10: documents looked at per query

Ranker = Callable[[str], list[str]]


@dataclass(frozen=True, slots=True)
class Query:
    """One query of the suite: its kind, text, and the names of the pages that answer it."""

    kind: str
    text: str
    expected: frozenset[str]


def load_suite(path: Path = SUITE) -> list[Query]:
    """The queries of the suite."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [
        Query(q["kind"], q["query"], frozenset("documents/" + e for e in q["expected"]))
        for q in data["queries"]
    ]


def recorded(path: Path = SUITE, backend: str = "sqlite") -> dict[str, dict[str, float]]:
    """The lexical tier's recorded levels on `backend`, by kind (and "all")."""
    key = "recorded" if backend == "sqlite" else f"recorded_{backend}"
    levels: dict[str, dict[str, float]] = json.loads(path.read_text(encoding="utf-8"))[key]
    return levels


def corpus_documents() -> list[Document]:
    """Every document of tests/data/corpus."""
    return [doc for path in sorted(CORPUS.glob("*.jsonl.gz")) for doc in read_documents(path)]


def metrics(queries: Sequence[Query], rank: Ranker) -> dict[str, dict[str, float]]:
    """hit@1, hit@5 and MRR@10 of a ranker, per kind and over all queries ("all")."""
    per: dict[str, list[tuple[float, float, float]]] = {}
    for query in queries:
        names = rank(query.text)[:DEPTH]
        position = next((i for i, n in enumerate(names, 1) if n in query.expected), None)
        row = (
            float(position == 1),
            float(position is not None and position <= 5),
            1.0 / position if position else 0.0,
        )
        per.setdefault(query.kind, []).append(row)
        per.setdefault("all", []).append(row)
    return {
        kind: {
            "hit@1": round(sum(r[0] for r in rows) / len(rows), 3),
            "hit@5": round(sum(r[1] for r in rows) / len(rows), 3),
            "mrr@10": round(sum(r[2] for r in rows) / len(rows), 3),
            "queries": len(rows),
        }
        for kind, rows in per.items()
    }


def lexical(store: Store) -> Ranker:
    """The lexical tier: names of the best documents, best first."""
    return lambda query: [hit.name for hit in store.rank_documents(query, limit=DEPTH)]


class Bare:
    """The bare FTS5 OR baseline: one own-content row per chunk, no stemming."""

    def __init__(self, path: Path, docs: Sequence[Document]) -> None:
        self.conn = sqlite3.connect(path)
        self.conn.execute(
            "CREATE VIRTUAL TABLE bare USING fts5(name UNINDEXED, title, description, heading, "
            "body, tokenize = 'unicode61 remove_diacritics 2')"
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

    def __call__(self, query: str) -> list[str]:
        """Documents in the order their best chunk ranks, for an OR of the query's words."""
        words = re.findall(r"\w+", query)
        if not words:
            return []
        match = " OR ".join('"' + w + '"' for w in words)
        rows = self.conn.execute(
            "SELECT name FROM bare WHERE bare MATCH ? ORDER BY bm25(bare, 0, 10, 4, 3, 1) "
            "LIMIT 200",
            (match,),
        )
        return list(dict.fromkeys(name for (name,) in rows))[:DEPTH]


def hybrid(store: Store) -> Ranker | None:
    """HYBRID: what `search --offline` ranks, the semantic tier fused with the lexical one
    (its index built here first, as `dk-mirror index update` would); None without the
    semantic packages."""
    from mirror.config import Settings
    from mirror.errors import MirrorError
    from mirror.service import ranking, semantic
    from mirror.service.context import Context

    ctx = Context(
        Settings(db_url=str(store.engine.url), offline=True), store, _no_upstream, time.time
    )
    try:
        semantic.index(ctx)
    except MirrorError:  # the extra is not installed
        return None

    def ranker(query: str) -> list[str]:
        return [hit.name for hit in ranking.local_ranking(ctx, query, limit=DEPTH)]

    return ranker


def _no_upstream() -> Any:
    raise RuntimeError("the relevance bench runs offline")


PG_TIER = "lexical PostgreSQL"


@contextmanager
def corpus_store(url: str, docs: Sequence[Document]) -> Iterator[Store]:
    """A store at `url` holding `docs`."""
    store = Store.open(url)
    try:
        store.put(docs, fetched_at=0.0, upstream="relevance")
        yield store
    finally:
        store.close()


@contextmanager
def tiers(
    folder: Path, pg_url: str | None = None, *, semantic: bool = True
) -> Iterator[dict[str, Ranker]]:
    """Each tier as a ranker over a store of the corpus built in `folder` (and the lexical
    tier on PostgreSQL too, in a scratch database on `pg_url`'s server, when given; the hybrid
    ones only with `semantic`: embedding the corpus takes minutes on a loaded machine)."""
    docs = corpus_documents()
    with corpus_store(f"sqlite:///{folder / 'relevance.sqlite3'}", docs) as store:
        found: dict[str, Ranker] = {
            "lexical": lexical(store),
            "bare FTS5 OR": Bare(folder / "bare.sqlite3", docs),
        }
        fused = hybrid(store) if semantic else None
        if fused is not None:
            found["hybrid"] = fused
        if pg_url is None:
            yield found
            return
        with scratch_database(pg_url, "relevance") as url, corpus_store(url, docs) as pg:
            found[PG_TIER] = lexical(pg)
            fused_pg = hybrid(pg) if fused is not None else None
            if fused_pg is not None:
                found["hybrid PostgreSQL"] = fused_pg
            yield found


def main() -> None:
    """Print the metrics of every tier, per kind."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--no-hybrid", action="store_true", help="skip the hybrid tiers (no embedding of the pages)"
    )
    add_pg_option(parser)
    args = parser.parse_args()
    queries = load_suite()
    with (
        tempfile.TemporaryDirectory() as tmp,
        tiers(Path(tmp), args.pg_url, semantic=not args.no_hybrid) as rankers,
    ):
        results = {name: metrics(queries, rank) for name, rank in rankers.items()}
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
        return
    kinds = sorted({kind for tier in results.values() for kind in tier if kind != "all"})
    print(f"{len(queries)} queries; hit@1 / hit@5 / MRR@10")
    print(f"{'kind':22}" + "".join(f"{name:>24}" for name in results))
    for kind in [*kinds, "all"]:
        cells = "".join(
            "{:>24}".format("{hit@1:.2f} / {hit@5:.2f} / {mrr@10:.2f}".format(**tier[kind]))
            for tier in results.values()
        )
        count = results["lexical"][kind]["queries"]
        print(f"{kind + f' ({count:.0f})':22}{cells}")
    print(
        "baseline: bare FTS5 OR; target: lexical at or above the levels recorded in "
        "tests/data/relevance.json (tests/test_relevance.py fails below them)"
    )


if __name__ == "__main__":
    main()
