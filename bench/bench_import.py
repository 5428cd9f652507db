"""Importing the 2,000-document corpus: documents/s vs raw sqlite3 executemany of the same rows.

Usage: python -m bench.bench_import [--repeat N]
Both sides read and parse the same gzip JSON Lines file and write the same rows into the same
schema; dk-mirror also validates every record and hashes its content.
Target (issue 2): at least 0.7x the raw rate.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sqlite3
import tempfile
import time
from pathlib import Path

from bench.common import english_corpus, median
from mirror.config import Settings
from mirror.service import Mirror
from mirror.store import Store

COLUMNS = (
    "name",
    "uri",
    "title",
    "description",
    "data_source",
    "update_time",
    "content_length_bytes",
    "content",
    "extra_json",
    "content_sha256",
    "fetched_at",
    "upstream",
    "seen_update_time",
)


def raw_import(path: Path, db: Path) -> int:
    """The baseline: parse the file and executemany INSERT OR REPLACE, in one transaction."""
    rows = []
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            d = json.loads(line)
            content = d["content"]
            rows.append(
                (
                    d["name"],
                    d["uri"],
                    d["title"],
                    d["description"],
                    d["name"].split("/")[1],
                    None,
                    len(content.encode()),
                    content,
                    None,
                    hashlib.sha256(content.encode()).hexdigest(),
                    time.time(),
                    "raw",
                    None,
                )
            )
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(
        f"INSERT OR REPLACE INTO documents ({','.join(COLUMNS)}) VALUES ({','.join('?' * 13)})",
        rows,
    )
    conn.execute("COMMIT")
    conn.close()
    return len(rows)


def main() -> None:
    """Time both imports into fresh, migrated stores, alternating."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    corpus = english_corpus()
    ours_t, raw_t = [], []
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            raw_db = Path(tmp) / f"raw{i}.sqlite3"
            Store.open(f"sqlite:///{raw_db}").close()  # same migrated schema, untimed
            start = time.perf_counter()
            count = raw_import(corpus, raw_db)
            raw_t.append(time.perf_counter() - start)

            url = f"sqlite:///{Path(tmp) / f'ours{i}.sqlite3'}"
            Store.open(url).close()
            with Mirror(Settings(db_url=url, offline=True)) as mirror:
                mirror.store  # noqa: B018 (open before timing, like the baseline's connect)
                start = time.perf_counter()
                assert mirror.import_file(corpus) == count
                ours_t.append(time.perf_counter() - start)
    raw_rate, our_rate = count / median(raw_t), count / median(ours_t)
    print(f"raw sqlite3 executemany  {raw_rate:,.0f} docs/s")
    print(f"dk-mirror import         {our_rate:,.0f} docs/s")
    print(
        f"ratio {our_rate / raw_rate:.2f}x (target >= 0.7x); {count} documents, {args.repeat} runs"
    )


if __name__ == "__main__":
    main()
