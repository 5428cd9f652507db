"""Mirror.get_documents of 20 cached names vs raw sqlite3 `SELECT ... WHERE name IN (...)`.

Usage: python -m bench.bench_get [--rounds N]
Target (issue 2): median and p99 at most 2x the raw query in the same run.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
from pathlib import Path

from bench.common import add_corpus_option, english_corpus, median, ms, pct, timed
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
        mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True))
        mirror.import_file(corpus)
        names = [s.name for s in mirror.list_documents()]
        rng = random.Random(42)
        draws = [rng.sample(names, 20) for _ in range(args.rounds)]
        raw = sqlite3.connect(db)
        query = f"SELECT * FROM documents WHERE name IN ({','.join('?' * 20)})"

        it_raw = iter(draws * 2)
        it_ours = iter(draws * 2)
        # Warm both (page cache, statement caches), then measure interleaved halves.
        for _ in range(50):
            raw.execute(query, next(it_raw)).fetchall()
            mirror.get_documents(next(it_ours))
        raw_times = timed(lambda: raw.execute(query, next(it_raw)).fetchall(), args.rounds)
        our_times = timed(lambda: mirror.get_documents(next(it_ours)), args.rounds)
        raw.close()
        mirror.close()
    for label, q in (("median", 50), ("p99", 99)):
        base, ours = pct(raw_times, q), pct(our_times, q)
        print(
            f"{label:6}  raw sqlite3 {ms(base)}  Mirror.get_documents {ms(ours)}  "
            f"ratio {ours / base:.2f}x (target <= 2x)"
        )
    print(
        f"rounds {args.rounds}, 20 names each, {len(names)} documents in store; "
        f"mean ratio {median(our_times) / median(raw_times):.2f}x"
    )


if __name__ == "__main__":
    main()
