"""Local search at scale: index build rate, store size, and query latency next to bare FTS5.

Usage: python -m bench.bench_search [--docs 50000] [--queries 300] [--dir PATH] [--keep]
                                    [--pg-url postgresql://USER@HOST:PORT/DB]
       python -m bench.bench_search --reuse DIR [--only TEXT]  # time again on kept stores
1. Build rate (documents/s) of Store.put for the shared corpus (English Chrome + TensorFlow),
   next to the raw writes of the same rows and index entries (bench/raw.py, derived before the
   clock starts), then for N synthetic documents generated deterministically from the corpus'
   own vocabulary (headings, paragraphs, code; ~5 KB median).
2. Space at that size: store file / Markdown bytes (issue 15: at most 1.8x, index included), and
   the index's own bytes (the tantivy folder beside the store) / Markdown bytes.
3. Latency, p50/p99, of `Store.search_local(q, limit=10)` (a grouped page: ranked documents,
   their best chunks) for the 50 most frequent words, frequency-drawn single words, two-word
   phrases and uniformly drawn words, next to a bare FTS5 baseline built in the same run from
   the same documents, and long natural-language questions (10 to 18 words: the OR path):
   the previous design, one own-content FTS5 row per chunk (title and
   description repeated) queried with `MATCH ? ORDER BY bm25 LIMIT 10` (AND, then OR if empty).
With --pg-url (or $DK_MIRROR_BENCH_PG_URL) the same documents are also put in a scratch
PostgreSQL database on that server (tsvector index), and its build rate and search_local
p50/p99 print next to SQLite's, with the ratio, from the same run (PostgreSQL issue).
Targets (search issue): p99 <= 30 ms for lexical search including the most common words.
Disk: about 2 GB at 50,000 documents, in a temporary folder removed at the end (unless --keep).
"""

from __future__ import annotations

import argparse
import collections
import functools
import random
import re
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from bench import raw
from bench.common import add_corpus_option, corpus_file, ms, pct
from mirror.models import Document
from mirror.records import read_documents
from mirror.search.chunking import chunk_markdown
from mirror.search.lexical import STOPWORDS
from mirror.store.store import Store

from .pg_scratch import add_pg_option, scratch_database

BATCH = 500
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{2,}")
LIMIT = 10
BARE = f"SELECT rowid FROM bare WHERE bare MATCH ? ORDER BY bm25(bare, 10, 4, 3, 1) LIMIT {LIMIT}"
BARE_TABLE = (
    "CREATE VIRTUAL TABLE bare USING fts5(title, description, heading, body, "
    "tokenize = 'unicode61 remove_diacritics 2')"
)


def corpus(directory: str | None = None) -> list[Document]:
    """The English Chrome and TensorFlow corpus files (see bench.common.corpus_file) as Documents."""
    names = ("developer.chrome.com-en.jsonl.gz", "tensorflow.org.jsonl.gz")
    paths = [corpus_file(name, directory) for name in names]  # all present before any reading
    return [doc for path in paths for doc in read_documents(path)]


def build(url: str, docs: Iterable[Document]) -> float:
    """Seconds to put `docs` in batches of BATCH into a new store (generation not counted)."""
    store = Store.open(url)
    total = 0.0

    def put(batch: list[Document]) -> float:
        start = time.perf_counter()
        store.put(batch, fetched_at=0.0, upstream="bench")
        return time.perf_counter() - start

    try:
        batch: list[Document] = []
        for doc in docs:  # streamed: 50,000 generated documents never sit in memory at once
            batch.append(doc)
            if len(batch) == BATCH:
                total += put(batch)
                batch = []
        if batch:
            total += put(batch)
    finally:
        # Closing waits for the index thread to finish what the last commits left it.
        start = time.perf_counter()
        store.close()
        total += time.perf_counter() - start
    return total


class Synthetic:
    """Deterministic Markdown documents drawn from the corpus' word frequencies."""

    def __init__(self, docs: list[Document], seed: int = 7) -> None:
        counts = collections.Counter(
            w for d in docs for w in _WORD.findall(d.content or "") if len(w) < 20
        )
        self.words = [w for w, _ in counts.most_common(30_000)]
        weights = [c for _, c in counts.most_common(30_000)]
        self.cum = list(_accumulate(weights))
        code = [
            line
            for d in docs
            for block in re.findall(r"```[a-z]*\n(.*?)```", d.content or "", re.S)
            for line in block.splitlines()
            if line.strip()
        ]
        self.code = code[:50_000]
        self.seed = seed

    def _sentence(self, rng: random.Random, n: int) -> str:
        words: list[str] = rng.choices(self.words, cum_weights=self.cum, k=n)
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."

    def document(self, i: int) -> Document:
        """Document number i (the same every run)."""
        rng = random.Random(self.seed * 1_000_003 + i)
        title = self._sentence(rng, rng.randint(3, 8))[:-1]
        # Log-normal sizes: median ~5 KB, a long tail of big reference pages.
        target = int(min(80_000, max(300, rng.lognormvariate(8.5, 0.7))))
        parts = [f"# {title}", self._paragraph(rng)]
        size = sum(map(len, parts))
        while size < target:
            depth = rng.choice((2, 2, 3, 3, 4))
            section = ["#" * depth + " " + self._sentence(rng, rng.randint(2, 6))[:-1]]
            for _ in range(rng.randint(1, 4)):
                section.append(self._paragraph(rng))
            if rng.random() < 0.35:
                start = rng.randrange(max(1, len(self.code) - 30))
                lines = self.code[start : start + rng.randint(3, 25)]
                section.append("```js\n" + "\n".join(lines) + "\n```")
            parts.extend(section)
            size += sum(map(len, section))
        name = f"documents/bench.example/{i // 1000}/page-{i}"
        return Document(
            name=name,
            uri="https://" + name.removeprefix("documents/"),
            content="\n\n".join(parts) + "\n",
            description=self._sentence(rng, rng.randint(8, 20)),
            data_source="bench.example",
            title=title,
        )

    def _paragraph(self, rng: random.Random) -> str:
        return " ".join(self._sentence(rng, rng.randint(6, 24)) for _ in range(rng.randint(1, 6)))

    def queries(self, count: int, words: int, docs: int) -> list[str]:
        """Queries of `words` words: 1 word drawn by frequency, longer ones as consecutive
        words of a generated document (so, like a user's phrase, they co-occur)."""
        rng = random.Random(1000 + words)
        out: list[str] = []
        while len(out) < count:
            if words == 1:
                word = rng.choices(self.words, cum_weights=self.cum)[0]
                if word.lower() not in STOPWORDS:
                    out.append(word)
                continue
            text = self.document(rng.randrange(docs)).content or ""
            candidates = [w for w in _WORD.findall(text) if w.lower() not in STOPWORDS]
            if len(candidates) > words:
                start = rng.randrange(len(candidates) - words)
                out.append(" ".join(candidates[start : start + words]))
        return out


def uniform_words(synthetic: Synthetic, count: int) -> list[str]:
    """One-word queries drawn uniformly from the vocabulary (any word a reader might look up),
    next to the frequency-drawn ones, which favour words found in most chunks."""
    rng = random.Random(4242)
    words = [w for w in synthetic.words if w.lower() not in STOPWORDS]
    return [rng.choice(words) for _ in range(count)]


# Glue a reader puts between the words that matter; all in the stopword list, as in a question.
_OPENERS = ("how do I", "why does my", "what is the best way to", "can I", "when should I")
_GLUE = ("the", "a", "with", "in", "for", "when", "and", "to", "of", "from", "my", "is")


def long_questions(synthetic: Synthetic, count: int, docs: int = 50_000) -> list[str]:
    """Natural-language questions of 10 to 18 words (the OR path: rarely does one page hold
    every word). Half take their content words from one generated document (a page that
    answers exists), half from two (none holds them all); stopword glue in between."""
    rng = random.Random(77)
    out: list[str] = []
    while len(out) < count:
        sources = 1 + len(out) % 2
        words: list[str] = []
        for _ in range(sources):
            text = synthetic.document(rng.randrange(docs)).content or ""
            found = [w for w in _WORD.findall(text) if w.lower() not in STOPWORDS]
            words += rng.sample(found, min(len(found), rng.randint(3, 5)))
        parts = [rng.choice(_OPENERS)]
        for word in words:
            parts += [word.lower(), rng.choice(_GLUE)]
        question = " ".join(parts[:-1]) + "?"
        if len(question.split()) >= 10:
            out.append(question[:500])  # the API's query limit
    return out


def _accumulate(values: list[int]) -> Iterator[int]:
    total = 0
    for v in values:
        total += v
        yield total


class Bare:
    """The baseline: one own-content FTS5 row per chunk, as before migration 0007."""

    def __init__(self, db: Path) -> None:
        self.conn = sqlite3.connect(db, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(BARE_TABLE)
        self.seconds = 0.0

    def add(self, docs: list[Document]) -> None:
        """Index a batch (chunking untimed: the SQL only)."""
        rows = [
            (doc.title, doc.description, chunk.heading, chunk.text)
            for doc in docs
            for chunk in chunk_markdown(doc.content or "")
        ]
        start = time.perf_counter()
        self.conn.execute("BEGIN")
        self.conn.executemany("INSERT INTO bare VALUES (?, ?, ?, ?)", rows)
        self.conn.execute("COMMIT")
        self.seconds += time.perf_counter() - start


def _bare_words(query: str) -> list[str]:
    words = re.findall(r"\w+", query)
    return ['"' + '" AND "'.join(words) + '"', '"' + '" OR "'.join(words) + '"']


def latency(store: Store, bare_db: Path, queries: list[str]) -> tuple[list[float], list[float]]:
    """Seconds per query for search_local and for the bare FTS statement, interleaved."""
    raw = sqlite3.connect(bare_db)
    attempts = [_bare_words(q) for q in queries]

    def bare(matches: list[str]) -> list[object]:
        for match in matches:
            rows: list[object] = raw.execute(BARE, (match,)).fetchall()
            if rows:
                break
        return rows

    ours: list[float] = []
    base: list[float] = []
    for query, matches in zip(queries[:20], attempts[:20], strict=True):  # warm caches
        store.search_local(query, limit=LIMIT)
        bare(matches)
    for query, matches in zip(queries, attempts, strict=True):
        ours.append(_time(functools.partial(store.search_local, query, limit=LIMIT)))
        base.append(_time(functools.partial(bare, matches)))
    raw.close()
    return ours, base


def index_bytes(db: Path) -> int:
    """Bytes of the search index: the tantivy folder beside the store, its shards' folders
    included (text_index.py)."""
    folder = Path(f"{db}-search")
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def raw_build(db: Path, docs: list[Document]) -> float:
    """Seconds of the raw writes of the rows and index entries Store.put writes for `docs`
    (derived untimed), into a new migrated store."""
    Store.open(f"sqlite:///{db}").close()
    rows, entries = raw.rows(docs), raw.entries(docs)
    start = time.perf_counter()
    raw.write(db, rows, entries)
    return time.perf_counter() - start


def _time(func: Callable[[], object]) -> float:
    start = time.perf_counter()
    func()
    return time.perf_counter() - start


def main() -> None:
    """Build the store and the baseline, then time the queries."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary stores go")
    parser.add_argument("--keep", action="store_true", help="keep the stores (prints where)")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="time the queries on stores kept by --keep"
    )
    parser.add_argument(
        "--only", default="", help="time only the query kinds whose label contains this text"
    )
    add_corpus_option(parser)
    add_pg_option(parser)
    args = parser.parse_args()
    real = corpus(args.corpus)
    if args.reuse:
        args.pg_url = None  # nothing of PostgreSQL is kept between runs
        queries(
            args, Synthetic(real), args.reuse / "synthetic.sqlite3", args.reuse / "bare.sqlite3"
        )
        return
    megabytes = sum(len((d.content or "").encode()) for d in real) / 1e6
    tmp = tempfile.mkdtemp(dir=args.dir)
    try:
        if args.pg_url:
            with scratch_database(args.pg_url, "search") as url:
                args.pg_store = url
                run(args, real, megabytes, Path(tmp))
        else:
            run(args, real, megabytes, Path(tmp))
    finally:
        if args.keep:
            print(f"stores kept in {tmp}")
        else:
            import shutil

            shutil.rmtree(tmp)


def run(args: argparse.Namespace, real: list[Document], megabytes: float, tmp: Path) -> None:
    """Everything main prints, in `tmp`."""
    plain = raw_build(tmp / "raw.sqlite3", real)
    indexed = build(f"sqlite:///{tmp}/corpus.sqlite3", real)
    print(
        f"corpus build: {len(real):,} docs ({megabytes:.1f} MB) Store.put {len(real) / indexed:,.0f}"
        f" docs/s; raw writes of the same rows + tantivy {len(real) / plain:,.0f} docs/s; ratio "
        f"{plain / indexed:.2f}x (no target: bench_import holds the import to its raw writes)"
    )
    synthetic = Synthetic(real)
    pg_url = getattr(args, "pg_store", None)
    if pg_url:
        seconds = build(pg_url, (synthetic.document(i) for i in range(args.docs)))
        print(f"PostgreSQL synthetic build: {args.docs:,} docs {args.docs / seconds:,.0f} docs/s")
    db = tmp / "synthetic.sqlite3"
    bare = Bare(tmp / "bare.sqlite3")
    markdown = 0
    sizes: list[int] = []

    def generated() -> Iterator[Document]:
        nonlocal markdown
        batch: list[Document] = []
        for i in range(args.docs):
            doc = synthetic.document(i)
            size = len((doc.content or "").encode())
            markdown += size
            sizes.append(size)
            batch.append(doc)
            if len(batch) == BATCH:
                bare.add(batch)
                batch = []
            yield doc
        if batch:
            bare.add(batch)

    started = time.perf_counter()
    seconds = build(f"sqlite:///{db}", generated())
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    bare.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    bare.conn.close()
    print(
        f"synthetic build: {args.docs:,} docs (median {statistics.median(sizes) / 1000:.1f}"
        f" KB, {markdown / 1e9:.2f} GB of Markdown) {args.docs / seconds:,.0f} docs/s indexed "
        f"({time.perf_counter() - started:.0f} s with generation and the baseline)"
    )
    bare_db = tmp / "bare.sqlite3"
    print(
        f"space: store file {db.stat().st_size / markdown:.2f}x the Markdown bytes (target <= "
        f"1.8x), index {index_bytes(db) / markdown:.2f}x; bare per-chunk FTS5 table alone "
        f"{bare_db.stat().st_size / markdown:.2f}x (filled at {args.docs / bare.seconds:,.0f} "
        "docs/s, SQL only)"
    )
    queries(args, synthetic, db, bare_db)


def queries(args: argparse.Namespace, synthetic: Synthetic, db: Path, bare_db: Path) -> None:
    """Time the query mixes on the built store and baseline (and on PostgreSQL, if built)."""
    store = Store.open(f"sqlite:///{db}")
    pg_url = getattr(args, "pg_store", None)
    pg = Store.open(pg_url) if pg_url else None
    print(f"{args.queries} queries per kind; a page of {LIMIT} results")
    common = [w for w in synthetic.words if w.lower() not in STOPWORDS][:50]
    mixes = [
        ("50 most common words", common * max(1, args.queries // len(common))),
        ("1-word by frequency", synthetic.queries(args.queries, 1, args.docs)),
        ("2-word", synthetic.queries(args.queries, 2, args.docs)),
        ("1-word uniform", uniform_words(synthetic, args.queries)),
        ("long questions (OR)", long_questions(synthetic, args.queries, args.docs)),
    ]
    for label_mix, mix in mixes:
        if args.only not in label_mix:
            continue
        ours, bare = latency(store, bare_db, mix)
        print(
            f"{label_mix:22} search_local p50 {ms(pct(ours, 50))} p99 {ms(pct(ours, 99))} | "
            f"bare FTS5 p50 {ms(pct(bare, 50))} p99 {ms(pct(bare, 99))} "
            f"(target p99 <= 30 ms)"
        )
        if pg is not None:
            theirs = pg_latency(pg, mix)
            print(
                f"{'':22} PostgreSQL   p50 {ms(pct(theirs, 50))} p99 {ms(pct(theirs, 99))} "
                f"({pct(theirs, 50) / pct(ours, 50):.1f}x / {pct(theirs, 99) / pct(ours, 99):.1f}x "
                "SQLite's search_local)"
            )
    store.close()
    if pg is not None:
        pg.close()


def pg_latency(store: Store, queries: list[str]) -> list[float]:
    """Seconds per search_local query on a PostgreSQL store (after the same warm-up)."""
    for query in queries[:20]:
        store.search_local(query, limit=LIMIT)
    return [_time(functools.partial(store.search_local, q, limit=LIMIT)) for q in queries]


if __name__ == "__main__":
    main()
