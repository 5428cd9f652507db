"""Importing the 2,000-document corpus: documents/s vs raw sqlite3 executemany of the same rows.

Usage: python -m bench.bench_import [--repeat N]

dk-mirror's import parses and validates every record, hashes and compresses its content, finds
its heading lines and identifier parts, writes the documents in one transaction and indexes
them in the tantivy index beside the store as they are written (mirror/store/textindex/sqlite/index.py).
Two baselines run in the same process on the same migrated schema:
- "same rows": raw sqlite3 executemany of exactly the document rows dk-mirror writes, then
  tantivy indexing exactly the entries it indexes (prepared before the clock starts): the
  writes alone;
- "documents only": parse the file and executemany the documents table, no index (what the
  import cost before the search index existed).
Target (issue 2): at least 0.7x the raw rate.
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from pathlib import Path

from bench.common import add_corpus_option, english_corpus, median
from mirror.config import Settings
from mirror.records import read_documents
from mirror.service import Mirror
from mirror.store.db import compression
from mirror.store.db.rows import document_row as _row
from mirror.store.schema.tables import documents
from mirror.store.store import Store
from mirror.store.textindex.engine import entry
from mirror.store.textindex.sqlite import index as text_index
from mirror.store.textindex.sqlite.entries import Entry

COLUMNS = tuple(c.name for c in documents.columns)
INSERT_DOC = f"INSERT OR REPLACE INTO documents ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})"


def prepared_rows(path: Path) -> tuple[list[tuple[object, ...]], list[Entry]]:
    """The document rows and index entries dk-mirror writes for the file (untimed)."""
    docs = read_documents(path)
    doc_rows = [tuple(_row(d, 0.0, "raw", packed=True).values()) for d in docs]
    return doc_rows, [entry(doc) for doc in docs if doc.content]


def raw_write(db: Path, doc_rows: list, entries: list) -> None:  # type: ignore[type-arg]
    """executemany the given rows in one IMMEDIATE transaction, with the store's pragmas, then
    index the entries in a tantivy folder beside it with the store's writer settings."""
    conn = sqlite3.connect(db, isolation_level=None)
    compression.register(conn)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany(INSERT_DOC, doc_rows)
    conn.execute("COMMIT")
    conn.close()
    if entries:
        folder = Path(f"{db}-raw-index")
        folder.mkdir()
        index = text_index.TextIndex(folder)._open()
        writer = index.writer(text_index.WRITER_HEAP, text_index.WRITER_THREADS)
        for row in entries:
            writer.add(row.name, row.document())
        writer.commit()
        writer.wait_merging_threads()


def fresh(tmp: str, name: str) -> tuple[str, Path]:
    """A new migrated store (untimed)."""
    path = Path(tmp) / f"{name}.sqlite3"
    url = f"sqlite:///{path}"
    Store.open(url).close()
    return url, path


def main() -> None:
    """Time the three imports into fresh stores, alternating, and print rates and ratios."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    add_corpus_option(parser)
    args = parser.parse_args()
    corpus = english_corpus(args.corpus)
    doc_rows, entries = prepared_rows(corpus)
    count = len(doc_rows)
    ours_t, same_t, docs_t = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            _, path = fresh(tmp, f"same{i}")
            start = time.perf_counter()
            raw_write(path, doc_rows, entries)
            same_t.append(time.perf_counter() - start)

            _, path = fresh(tmp, f"docs{i}")
            start = time.perf_counter()
            parsed = [
                tuple(_row(d, 0.0, "raw", packed=True).values()) for d in read_documents(corpus)
            ]
            raw_write(path, parsed, [])
            docs_t.append(time.perf_counter() - start)

            url, _ = fresh(tmp, f"ours{i}")
            with Mirror(Settings(db_url=url, offline=True)) as mirror:
                mirror.stats()  # open (and migrate) before timing, like the baselines' connect
                start = time.perf_counter()
                assert mirror.import_file(corpus).imported == count
                ours_t.append(time.perf_counter() - start)
    ours = count / median(ours_t)
    same = count / median(same_t)
    docs_only = count / median(docs_t)
    print(f"dk-mirror import (parse, hash, index)         {ours:8,.0f} docs/s")
    print(
        f"raw executemany + tantivy, same rows         {same:8,.0f} docs/s   ratio {ours / same:.2f}x (target >= 0.7x)"
    )
    print(
        f"raw parse + executemany, documents only       {docs_only:8,.0f} docs/s   ratio {ours / docs_only:.2f}x"
    )
    print(f"{count} documents, median of {args.repeat} runs")


if __name__ == "__main__":
    main()
