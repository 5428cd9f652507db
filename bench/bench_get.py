"""Mirror.get_documents of 20 cached names vs raw sqlite3 `SELECT ... WHERE name IN (...)`.

Usage: python -m bench.bench_get [--rounds N] [--corpus DIR]
Two baselines, in the same run on the same draws:
- raw rows + inflate: the raw query, then every stored Markdown inflated to its text (the
  store keeps it zlib-compressed on SQLite, so no reader of the text can do less). The target
  is held to this one: median and p99 at most 2x (issue 2's target, set when the raw rows
  were the text; bench_scale prints the same ratio at 10k to 1M documents).
- raw rows: the query alone, the compressed bytes as stored (printed, no target).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
from pathlib import Path

from bench.common import (
    add_corpus_option,
    english_corpus,
    inflated,
    median,
    ms,
    pct,
    target,
    timed,
)
from mirror.config import Settings
from mirror.service import Mirror


def main() -> None:
    """Build a store from the corpus, then time both paths on the same random draws."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2000)
    add_corpus_option(parser)
    args = parser.parse_args()
    corpus = english_corpus(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        # Words only: this bench times reads; the embedding every write now adds by default
        # is bench_import_embed's to time, and would only slow the set-up here.
        mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True, semantic=False))
        mirror.import_file(corpus)
        names = [s.name for s in mirror.list_documents()]
        rng = random.Random(42)
        draws = [rng.sample(names, 20) for _ in range(args.rounds)]
        raw = sqlite3.connect(db)
        query = f"SELECT * FROM documents WHERE name IN ({','.join('?' * 20)})"

        it_raw, it_text, it_ours = iter(draws * 2), iter(draws * 2), iter(draws * 2)
        # Warm all three (page cache, statement caches), then measure one after the other.
        for _ in range(50):
            raw.execute(query, next(it_raw)).fetchall()
            inflated(raw.execute(query, next(it_text)))
            mirror.get_documents(next(it_ours))
        raw_times = timed(lambda: raw.execute(query, next(it_raw)).fetchall(), args.rounds)
        text_times = timed(lambda: inflated(raw.execute(query, next(it_text))), args.rounds)
        our_times = timed(lambda: mirror.get_documents(next(it_ours)), args.rounds)
        raw.close()
        mirror.close()
    for label, q in (("median", 50), ("p99", 99)):
        base, text, ours = pct(raw_times, q), pct(text_times, q), pct(our_times, q)
        print(
            f"{label:6}  Mirror.get_documents {ms(ours)}  raw rows + inflate {ms(text)}  "
            f"ratio {ours / text:.2f}x {target(ours / text, 2, at_least=False, source='issue 2')}"
            f"  |  raw rows {ms(base)} ratio {ours / base:.2f}x (no target)"
        )
    print(
        f"rounds {args.rounds}, 20 names each, {len(names)} documents in store; "
        f"median ratio to raw rows + inflate {median(our_times) / median(text_times):.2f}x"
    )


if __name__ == "__main__":
    main()
