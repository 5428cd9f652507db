"""Relevance of local search when the index is split in shards (mirror/store/textindex/sqlite/shards.py):
the relevance suite's lexical metrics on one store, its index built as one shard and then split.

Usage: python -m bench.bench_shard_relevance [--padding 60000] [--split-from 20000] [--corpus DIR]

Each shard weighs words by its own page counts and lengths, so a split index can rank close
pages in another order than one index would. The suite's pages (tests/data/corpus) alone are
too few to split (an index splits past SPLIT_FROM pages, 100,000), so the store holds them and
--padding synthetic pages (bench_search's generator, from the corpus' vocabulary), which compete
with them for every query as other products' pages would. The same store is indexed twice in
this run: as one shard (the baseline) and split after --split-from pages (a rebuild adds pages
in name order: the synthetic pages fill shard 0, then the rest, the suite's pages among them,
go by their names' hash). Target: the split index ranks as well as the one shard.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.bench_relevance import corpus_documents, lexical, load_suite, metrics
from bench.bench_search import Synthetic, corpus
from bench.common import add_corpus_option
from mirror.store.store import Store
from mirror.store.textindex.sqlite import shards as index_shards

_BATCH = 1000


def held(store: Store) -> list[int]:
    """Pages in each shard."""
    with store.engine.connect() as conn, conn.begin():
        return store.text_index().held(conn.connection.driver_connection)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--padding", type=int, default=60_000)
    parser.add_argument("--split-from", type=int, default=20_000)
    add_corpus_option(parser)
    args = parser.parse_args()
    queries = load_suite()
    synthetic = Synthetic(corpus(args.corpus))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(f"sqlite:///{Path(tmp) / 'store.sqlite3'}")
        try:
            for start in range(0, args.padding, _BATCH):
                end = min(args.padding, start + _BATCH)
                docs = [synthetic.document(i) for i in range(start, end)]
                store.put(docs, fetched_at=0.0, upstream="padding")
            store.put(corpus_documents(), fetched_at=0.0, upstream="relevance")
            for label, split_from in (("one shard", 10**12), ("split", args.split_from)):
                index_shards.SPLIT_FROM = split_from
                store.rebuild_index()
                counts = held(store)
                results[label] = metrics(queries, lexical(store))
                print(f"{label}: pages per shard {counts}", flush=True)
        finally:
            store.close()
    print(f"{len(queries)} queries, {args.padding} synthetic pages; hit@1 / hit@5 / MRR@10")
    print(f"{'kind':22}" + "".join(f"{name:>24}" for name in results))
    kinds = sorted(k for k in results["one shard"] if k != "all")
    for kind in [*kinds, "all"]:
        cells = "".join(
            "{:>24}".format("{hit@1:.3f} / {hit@5:.3f} / {mrr@10:.3f}".format(**r[kind]))
            for r in results.values()
        )
        print(f"{kind:22}{cells}")
    one, split = results["one shard"]["all"]["hit@1"], results["split"]["all"]["hit@1"]
    print(
        f"target: the split index ranks as well as one shard (the baseline): hit@1 "
        f"{split:.3f} vs {one:.3f}: {'met' if split >= one else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
