"""PostgreSQL next to SQLite, in the same run: import, get20, search, and serve scaling.

Usage: python -m bench.bench_pg [--docs N] [--seconds S] [--pg-url URL] [--corpus DIR]

Without --pg-url a throwaway PostgreSQL 15 cluster is started for the run (Debian's
/usr/lib/postgresql/15/bin, the same helper the tests use; durability off, as in the tests,
so its numbers flatter PostgreSQL's writes). The baseline is SQLite on the same documents.

- import: documents/s of Store.put_stream of the corpus into an empty store;
- get20: p50/p99 of Store.get_many of 20 random cached names;
- search: p50/p99 of Store.rank_documents (the store's lexical ranking) for corpus titles,
  where the store has a local search index (PostgreSQL gets one from its search migration);
- search @rule: the same for CSS at-rules written with their `@` (AT_RULES), which search
  the pages that write the at-rule, then those with the word (mirror.search.lexical);
- snippets: p50/p99 of the snippets of a page of 10 local results for a corpus title, the
  store's way (ts_headline on PostgreSQL, best_window on SQLite), next to best_window's cost
  for the same pages ("window");
- serve: requests/s of REST batchGet (20 names) at 64 keep-alive clients spread over 1, 2 and
  3 `dk-mirror serve` processes on the one PostgreSQL database (1 on SQLite for reference).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import urlencode

from bench.bench_serve import start_server
from bench.common import add_corpus_option, english_corpus, ms, pct, timed
from bench.load import request_bytes, run_spread
from mirror.models import Document
from mirror.records import read_documents
from mirror.search.snippets import best_window, plain_text
from mirror.service import search
from mirror.store.store import Store

CLIENTS = 64
# At-rules the chrome corpus writes (each on a few to a few hundred pages, "@media" most).
AT_RULES = (
    "@scope", "@layer", "@container", "@media", "@property", "@font-face", "@supports",
    "@keyframes", "@import", "@starting-style",
)  # fmt: skip


@contextmanager
def postgres(url: str | None) -> Iterator[str]:
    """The PostgreSQL database to measure: --pg-url, else one in a throwaway cluster."""
    if url:
        yield url
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres_server import PostgresServer, binaries

    bin_dir = binaries()
    if bin_dir is None:
        raise SystemExit(
            "bench: no PostgreSQL 15 binaries (apt-get install postgresql), or pass --pg-url"
        )
    server = PostgresServer(bin_dir)
    try:
        server.start()
        server.create_template()
        yield server.fresh_database(migrated=False)
    finally:
        server.stop()


def measure_store(url: str, docs: list[Document], rounds: int) -> dict[str, str]:
    """Import, get20 and search on the store at `url` (emptied first by being new)."""
    store = Store.open(url)
    try:
        start = time.perf_counter()
        store.put_stream(iter(docs), fetched_at=1_700_000_000.0, upstream="bench")
        imported = len(docs) / (time.perf_counter() - start)
        names = [d.name for d in docs]
        rng = random.Random(7)
        draws = [rng.sample(names, 20) for _ in range(rounds)]
        it = iter(draws)
        gets = timed(lambda: store.get_many(next(it)), rounds)
        out = {
            "import docs/s": f"{imported:,.0f}",
            "get20 p50": ms(pct(gets, 50)),
            "get20 p99": ms(pct(gets, 99)),
        }
        if store.has_search_index():
            queries = iter([d.title or d.name for d in rng.sample(docs, rounds)])
            found = timed(lambda: store.rank_documents(next(queries), limit=10), rounds)
            out.update({"search p50": ms(pct(found, 50)), "search p99": ms(pct(found, 99))})
            out.update(measure_snippets(store, [d.title or d.name for d in docs], rounds))
            # Its own draws: the rows above measure the same queries as before it was added.
            rules = iter(random.Random(17).choices(AT_RULES, k=rounds))
            found = timed(lambda: store.rank_documents(next(rules), limit=10), rounds)
            out.update(
                {"search @rule p50": ms(pct(found, 50)), "search @rule p99": ms(pct(found, 99))}
            )
        else:
            out.update({"search p50": "no index", "search p99": "no index"})
        return out
    finally:
        store.close()


def measure_snippets(store: Store, titles: list[str], rounds: int) -> dict[str, str]:
    """p50/p99 of the snippets of a page of 10 local results (the store's way: ts_headline on
    PostgreSQL, one statement a page), and of the same pages cut as the shells cut them
    before, best_window(plain_text(chunk)) in Python."""
    rng = random.Random(13)
    pages = []
    for query in rng.sample(titles, min(rounds, len(titles))):
        hits = store.search_local(query, limit=10)
        pages.append((query, [hit.text for hit in hits]))
    it = iter(pages * (rounds // len(pages) + 1))
    ours = timed(lambda: search.snippets(store, *next(it)), rounds)
    it = iter(pages * (rounds // len(pages) + 1))
    window = timed(
        lambda: [best_window(plain_text(t), q) for q, texts in [next(it)] for t in texts], rounds
    )
    return {
        "snippets p50": ms(pct(ours, 50)),
        "snippets p99": ms(pct(ours, 99)),
        "window p50": ms(pct(window, 50)),
        "window p99": ms(pct(window, 99)),
    }


def batch_requests(url: str, names: list[str], count: int) -> list[bytes]:
    """REST batchGet requests of 20 random names for the server at `url`."""
    rng = random.Random(11)
    return [
        request_bytes(url, "GET", "/v1/documents:batchGet?" + urlencode(
            [("names", n) for n in rng.sample(names, 20)]))
        for _ in range(count)
    ]  # fmt: skip


def serve_rps(db: str, names: list[str], servers: int, seconds: float) -> tuple[float, int]:
    """Requests/s and errors of 64 clients spread over `servers` serve processes on `db`."""
    with ExitStack() as stack:
        urls = []
        for _ in range(servers):
            process, url = start_server(db)
            stack.callback(_stop, process)
            urls.append(url)
        targets = [(url, batch_requests(url, names, 200)) for url in urls]
        run_spread(targets, CLIENTS, 1.0)  # warm: every server grows its threads and pool
        level = run_spread(targets, CLIENTS, seconds)
    return level.rps, level.errors


def _ratio(value: str, base: str) -> str:
    """`value` / `base` for two figures as the table prints them ("9.06 ms", "1,018")."""
    try:
        ratio = float(value.split()[0].replace(",", "")) / float(base.split()[0].replace(",", ""))
    except (ValueError, IndexError, ZeroDivisionError):
        return "-"
    return f"x{ratio:.2f}"


def _stop(process) -> None:  # type: ignore[no-untyped-def]
    process.terminate()
    process.wait(timeout=30)


def main() -> None:
    """Run the comparison and print one table per part, with ratios to SQLite."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000, help="corpus documents to load")
    parser.add_argument("--rounds", type=int, default=300, help="get20/search calls measured")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per serve level")
    parser.add_argument("--pg-url", help="an empty PostgreSQL database to use")
    parser.add_argument(
        "--servers", type=int, nargs="+", default=[1, 2, 3], help="serve processes per level"
    )
    add_corpus_option(parser)
    args = parser.parse_args()
    docs = read_documents(english_corpus(args.corpus))[: args.docs]
    names = [d.name for d in docs]
    print(f"{len(docs)} documents; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp, postgres(args.pg_url) as pg:
        sqlite = f"sqlite:///{Path(tmp) / 'bench.sqlite3'}"
        results = {"sqlite": measure_store(sqlite, docs, args.rounds)}
        results["postgresql"] = measure_store(pg, docs, args.rounds)
        print(f"\n{'':<18}{'sqlite':>12}{'postgresql':>14}{'pg/sqlite':>11}")
        for key in results["sqlite"]:
            lite, pg_value = results["sqlite"][key], results["postgresql"].get(key, "-")
            print(f"{key:<18}{lite:>12}{pg_value:>14}{_ratio(pg_value, lite):>11}")
        base, errors = serve_rps(sqlite, names, 1, args.seconds)
        print(
            f"\nserve, {CLIENTS} clients, REST batchGet of 20 (requests/s; ratio to the first level)"
        )
        print(f"sqlite      1 server : {base:8.0f}  errors {errors}")
        one = 0.0
        for servers in args.servers:
            rps, errors = serve_rps(pg, names, servers, args.seconds)
            one = one or rps
            print(
                f"postgresql  {servers} server{'s' if servers > 1 else ' '}: {rps:8.0f}  "
                f"errors {errors}  x{rps / one:.2f} of {args.servers[0]}, x{rps / base:.2f} of sqlite"
            )
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("baseline: SQLite on the same documents, same run; no target (a comparison)")


if __name__ == "__main__":
    main()
