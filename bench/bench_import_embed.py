"""Import with semantic search on: the vectors of every page built as the pages are written.

Usage: python -m bench.bench_import_embed [--corpus DIR] [--repeat 1] [--docs N] [--pg-url URL]

Imports the shared corpus' three files (2,774 pages) into one fresh store with
`dk-mirror import FILE`, one real process per file as a user types them, three ways, in the
same run:
  words only    DK_MIRROR_SEMANTIC=off: the import alone, the baseline;
  on (default)  every import embeds what it wrote (the issue's target: the vectors of the
                2,774 pages in under 60 s);
  index update  off, then `dk-mirror index update`: the way before the tier was on by default.
Prints wall seconds (median of --repeat), the ratio to the baseline, the seconds spent
embedding (on: the commands' own "embedded N ... in S s" lines), and checks every page has
its vector. --docs N imports the first N records of each file only (a smoke run). With --pg-url (a PostgreSQL server: a scratch database is made and dropped) the
"on" row is run there too.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, add_corpus_option, corpus_file, first_records
from bench.pg_scratch import add_pg_option

FILES = ("developer.chrome.com-en.jsonl.gz", "developer.chrome.com-intl.jsonl.gz",
         "tensorflow.org.jsonl.gz")  # fmt: skip
_EMBEDDED = re.compile(r"embedded (\d+) document\(s\) for semantic search in ([\d.]+) s")


def _run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mirror", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench: dk-mirror {' '.join(args)} failed:\n{done.stderr}")
    return done.stderr


def _pending(db: str) -> tuple[int, int]:
    from mirror.config import db_url_from
    from mirror.semantic import model
    from mirror.store.store import Store

    store = Store.open(db_url_from(db))
    try:
        facts = store.semantic_facts(model.status().key)
    finally:
        store.close()
    return facts.vectors, facts.pending


def one_run(way: str, files: list[Path], db: str) -> tuple[float, float, int, int]:
    """(wall seconds, seconds embedding, vectors, pending) of importing `files` into `db`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DK_MIRROR_")}
    env["DK_MIRROR_DB"] = db
    if way != "on":
        env["DK_MIRROR_SEMANTIC"] = "off"
    said = ""
    start = time.perf_counter()
    for path in files:
        said += _run(env, "import", str(path))
    if way == "index update":
        env.pop("DK_MIRROR_SEMANTIC")
        said += _run(env, "index", "update")
    wall = time.perf_counter() - start
    embedding = sum(float(m.group(2)) for m in _EMBEDDED.finditer(said))
    return (wall, embedding, *_pending(db))


def main() -> None:
    """Run the three ways and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_corpus_option(parser)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--docs", type=int, help="import only the first N records of each file")
    add_pg_option(parser)
    args = parser.parse_args()
    files = [corpus_file(name, args.corpus) for name in FILES]
    rows: list[tuple[str, list[tuple[float, float, int, int]]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.docs:
            files = [first_records(path, args.docs, Path(tmp)) for path in files]
        ways = ["words only", "on", "index update"]
        runs: dict[str, list[tuple[float, float, int, int]]] = {w: [] for w in ways}
        for turn in range(args.repeat):
            for way in ways:  # interleaved, so a busy moment of the machine hits every way
                db = str(Path(tmp) / f"{way.replace(' ', '-')}-{turn}.sqlite3")
                runs[way].append(one_run(way, files, db))
        rows = [(w, runs[w]) for w in ways]
        if args.pg_url:
            from bench.pg_scratch import scratch_database

            pg_runs = []
            for _ in range(args.repeat):
                with scratch_database(args.pg_url, "import_embed") as url:
                    pg_runs.append(one_run("on", files, url))
            rows.append(("on, PostgreSQL", pg_runs))
    base = statistics.median(r[0] for r in rows[0][1])
    print(f"import of {len(files)} corpus files, median of {args.repeat}, seconds:")
    print(
        f"{'way':<16} {'wall':>8} {'vs words only':>14} {'embedding':>10} {'vectors':>8} {'pending':>8}"
    )
    for way, found in rows:
        wall = statistics.median(r[0] for r in found)
        embedding = statistics.median(r[1] for r in found)
        vectors, pending = found[-1][2], found[-1][3]
        shown = f"{embedding:10.1f}" if embedding else f"{'-':>10}"
        print(f"{way:<16} {wall:8.1f} {wall / base:13.2f}x {shown} {vectors:8} {pending:8}")


if __name__ == "__main__":
    main()
