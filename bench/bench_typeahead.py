"""Type-ahead server time per keystroke at 50,000 pages, against a raw sqlite3 title lookup.

Usage: python -m bench.bench_typeahead [--docs 50000] [--queries 120] [--cache DIR]
                                       [--rebuild] [--corpus DIR]

The store holds the real English Chrome corpus (reference pages, so the symbol index has API
names) plus synthetic pages up to --docs (bench.bench_search.Synthetic: titles, headings,
paragraphs, code), built once into --cache (default ~/.cache/dk-mirror-bench/typeahead) and
reused. Queries are typed one character at a time: page titles, headings and API symbols drawn
from the store, and corpus words (which often match only in the full text). Every prefix is
one keystroke sent to the browser's /typeahead endpoint (Starlette's test client, in this
process). Server time is what the endpoint's Server-Timing header reports (the lookup, full
text when the prefixes leave room, JSON); also printed: the round trip through the test client,
Mirror.typeahead called directly, and the type-ahead index's lookup alone.

Baseline, on the same keystrokes in the same run: raw sqlite3
`SELECT name, title FROM documents WHERE title LIKE 'prefix%' LIMIT 12`, the least a title-only
type-ahead over the store can do (no headings, no symbols, no full text). Also printed: the
outline's build time (once per store change, in the background while serving) and its size.
Target (issue 30): type-ahead server time p99 <= 50 ms per keystroke at 50,000 pages.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from bench.bench_search import Synthetic, build, corpus
from bench.common import add_corpus_option, corpus_file, median, ms, pct
from mirror.config import Settings
from mirror.models import Document
from mirror.records import read_documents
from mirror.service import Mirror

LIMIT = 12
TARGET_P99 = 0.050


def store_path(cache: Path, docs: int, corpus_dir: str | None, rebuild: bool) -> Path:
    """The bench store, built on first use: the Chrome corpus, then synthetic pages."""
    # The corpus is asked for first, even when a built store is cached: a wrong --corpus is
    # an error at once, not a bench run on whatever an earlier run left in the cache.
    source = corpus_file("developer.chrome.com-en.jsonl.gz", corpus_dir)
    path = cache / f"typeahead-{docs}.sqlite3"
    if path.exists() and not rebuild:
        return path
    for old in cache.glob(f"typeahead-{docs}.sqlite3*"):
        if old.is_dir():
            import shutil

            shutil.rmtree(old)
        else:
            old.unlink()
    real = read_documents(source)
    synthetic = Synthetic(corpus(corpus_dir))

    def documents() -> Iterator[Document]:
        yield from real[:docs]
        for i in range(max(0, docs - len(real))):
            yield synthetic.document(i)

    print(f"building a {docs:,}-page store at {path} (once) ...", flush=True)
    seconds = build(f"sqlite:///{path}", documents())
    print(f"  built in {seconds:.0f} s", flush=True)
    return path


def keystrokes(path: Path, count: int) -> list[str]:
    """Every prefix of `count` queries: titles, headings, symbols and plain words."""
    rng = random.Random(30)
    db = sqlite3.connect(path)
    titles = [t for (t,) in db.execute("SELECT title FROM documents WHERE title IS NOT NULL")]
    symbols = [s for (s,) in db.execute("SELECT DISTINCT name FROM symbols")]
    db.close()
    words = [w for t in titles for w in t.split() if len(w) > 3]
    queries: list[str] = []
    for i in range(count):
        pick = i % 4
        if pick == 0:
            queries.append(" ".join(rng.choice(titles).split()[:3]))
        elif pick == 1 and symbols:
            queries.append(rng.choice(symbols))
        elif pick == 2:
            queries.append(" ".join(rng.sample(words, 2)))  # rarely a prefix: full text
        else:
            queries.append(rng.choice(words))
    return [q[:n] for q in queries for n in range(1, min(len(q), 24) + 1)]


def main() -> None:
    """Build (or reuse) the store, then time every keystroke both ways."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--rebuild", action="store_true")
    add_corpus_option(parser)
    args = parser.parse_args()
    cache = args.cache or Path.home() / ".cache" / "dk-mirror-bench" / "typeahead"
    cache.mkdir(parents=True, exist_ok=True)
    path = store_path(cache, args.docs, args.corpus, args.rebuild)

    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from mirror.serve.web.routes import WebOptions, web_routes

    typed = keystrokes(path, args.queries)
    with Mirror(Settings(db_url=f"sqlite:///{path}", offline=True)) as mirror:
        start = time.perf_counter()
        outline = mirror.outline()
        first = time.perf_counter() - start
        kinds = dict(zip(("symbol", "page", "heading"), outline.typeahead.columns, strict=True))
        sizes = ", ".join(f"{len(col.entries):,} {kind}s" for kind, col in kinds.items())
        print(f"outline: {len(outline.titles):,} pages; {sizes}; built in {first:.1f} s")

        client = TestClient(Starlette(routes=web_routes(mirror, WebOptions())))
        raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        baseline_sql = (
            "SELECT name, title FROM documents WHERE title LIKE ? ESCAPE '\\' "
            f"AND content IS NOT NULL LIMIT {LIMIT}"
        )

        server_times: list[float] = []

        def ours(prefix: str) -> tuple[int, bool]:
            response = client.get("/typeahead", params={"q": prefix})
            assert response.status_code == 200, response.text
            timing = response.headers["server-timing"]
            server_times.append(float(timing.split("dur=")[1]) / 1000)
            body = response.json()
            return int(body["count"]), any(r["kind"] == "text" for r in body["results"])

        def baseline(prefix: str) -> int:
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            return len(raw.execute(baseline_sql, (escaped + "%",)).fetchall())

        for prefix in typed[:50]:  # warm: page cache, search index readers, statement caches
            ours(prefix)
            baseline(prefix)
        # The same keystrokes without HTTP: Mirror.typeahead alone (lookup and full text).
        service_times = []
        for prefix in typed:
            t0 = time.perf_counter()
            mirror.typeahead(prefix, LIMIT)
            service_times.append(time.perf_counter() - t0)
        # The index lookup alone (what mirror/search/typeahead.py decides), without full text.
        lookup_times = []
        for prefix in typed:
            t0 = time.perf_counter()
            outline.typeahead.lookup(prefix, LIMIT)
            lookup_times.append(time.perf_counter() - t0)
        our_times, base_times, shown = [], [], 0
        server_times.clear()  # the warm-up's
        prefix_only, with_text = [], []  # keystrokes the prefixes filled, or full text helped
        for prefix in typed:
            t0 = time.perf_counter()
            n, text = ours(prefix)
            t1 = time.perf_counter()
            baseline(prefix)
            t2 = time.perf_counter()
            our_times.append(t1 - t0)
            base_times.append(t2 - t1)
            (with_text if text else prefix_only).append(server_times[-1])
            shown += n
        raw.close()

    p50, p99 = median(server_times), pct(server_times, 99)
    b50, b99 = median(base_times), pct(base_times, 99)
    print(
        f"{len(typed):,} keystrokes of {args.queries} queries; {shown / len(typed):.1f} results each"
    )
    print(f"  server time          p50 {ms(p50)}  p99 {ms(p99)}  max {ms(max(server_times))}")
    print(
        f"  endpoint round trip  p50 {ms(median(our_times))}  p99 {ms(pct(our_times, 99))}"
        "  (test client: + routing, threads, HTTP)"
    )
    for label, part in (("prefix matches only", prefix_only), ("with full text", with_text)):
        if part:
            print(
                f"    {label:<19} {len(part):>5} keystrokes  p50 {ms(median(part))}  p99 {ms(pct(part, 99))}"
            )
    print(
        f"  Mirror.typeahead     p50 {ms(median(service_times))}  "
        f"p99 {ms(pct(service_times, 99))}  (no HTTP)"
    )
    print(
        f"  index lookup alone   p50 {ms(median(lookup_times))}  "
        f"p99 {ms(pct(lookup_times, 99))}  max {ms(max(lookup_times))}  (no full text)"
    )
    print(f"  raw sqlite3 LIKE     p50 {ms(b50)}  p99 {ms(b99)}  (titles only)")
    print(f"  ratio ours/raw       p50 {p50 / b50:.2f}x  p99 {p99 / b99:.2f}x")
    met = "met" if p99 <= TARGET_P99 else "MISSED"
    print(f"  target server time p99 <= {TARGET_P99 * 1000:.0f} ms (issue 30): {met}")


if __name__ == "__main__":
    main()
