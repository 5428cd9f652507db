"""Mirror.crawl from the emulator with injected latency: docs/s against the ideal bound.

Usage: python -m bench.bench_crawl [--latency 0.05] [--concurrency 1 4 8] [--synthetic 50000]
       [--corpus DIR]
Target (issue 11): at concurrency 8, documents/s at least 0.7x the ideal bound
(concurrency x 20 / latency) of the same run; peak memory flat in the number of documents.

The corpus run crawls the ~2,000-document developer.chrome.com corpus: every page is a seed,
links are followed one hop inside developer.chrome.com/, and the ~300 pages they lead to that
the corpus lacks are served as one-line stubs, so every name resolves (no 404 narrowing).
The synthetic run crawls N generated pages that link as a site does (a tree from page 0 plus
cross links and cycles), from the single seed page 0: link discovery drives the whole crawl.
Quotas are off (pacing lifted). Every request waits --latency seconds in the emulator.

The ideal ignores the machine. Two measured bounds say what it allows, both printed next to
the ideal, with the crawl's ratio to each:
- upstream alone: a bare client in a child process (stdlib http.client, one keep-alive
  connection per thread, `concurrency` threads) asks for the same batches and only reads the
  bytes. On a small machine the emulator's own CPU (it runs here, beside the crawler) caps it
  well under the ideal.
- store alone: the child writes the crawled documents again into a fresh store, 20 per
  transaction (what one batch's commit costs: documents, history, search index, commit), and
  again GROUP_DOCUMENTS (200) per transaction, the most an SQLite crawl's group commit holds.
The crawl cannot beat the lower of upstream alone and store alone (grouped), and does both
jobs (and reads links) on the same cores, in one interpreter. CPU ms/doc is the crawler process's own CPU time per document: steadier than wall time
when other work shares the machine.

The emulator runs in this process and the crawler in a child process (a fresh interpreter per
run), so they do not share an interpreter lock, and the child's own peak RSS is measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, add_corpus_option, english_corpus
from mirror.service.crawl_walk import GROUP_DOCUMENTS
from tests.emulator import Emulator, Fault
from tests.synthetic import synthetic_documents

CHROME = "documents/developer.chrome.com/"


def load(path: Path) -> list[dict[str, Any]]:
    """Every Document record in a gzipped JSON-lines corpus file."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def with_stubs(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`docs` plus a one-line page for every developer.chrome.com page they link to and lack."""
    from mirror.crawl.links import linked_names

    have = {d["name"] for d in docs}
    wanted: dict[str, None] = {}
    for doc in docs:
        for name in linked_names(doc["content"], doc["uri"]):
            if name.startswith(CHROME) and name not in have:
                wanted[name] = None
    stubs = [{"name": n, "content": f"# {n.rsplit('/', 1)[-1]}\n"} for n in wanted]
    return docs + stubs


def linked_synthetic(count: int) -> list[dict[str, Any]]:
    """`count` synthetic pages linking as a site does (as tests/test_crawl_kill.py makes them)."""
    docs = synthetic_documents(count)
    for i, doc in enumerate(docs):
        links = [2 * i + 1, 2 * i + 2, (i * 7 + 3) % count, 0]
        doc["content"] += "\n" + "\n".join(
            f"- [page {j}](/guide/page-{j:05d})" for j in links if j < count
        )
    return docs


def crawl_in_child(
    emu: Emulator,
    seeds: list[str],
    prefix: str,
    depth: int | None,
    concurrency: int,
    *,
    bound: bool = True,
) -> dict[str, Any]:
    """Run one crawl into a fresh store in a child interpreter; its report, time and RSS."""
    with tempfile.TemporaryDirectory() as tmp:
        seeds_file = Path(tmp) / "seeds.txt"
        seeds_file.write_text("\n".join(seeds) + "\n")
        args = [
            sys.executable, "-m", "bench.bench_crawl", "--child",
            f"sqlite:///{Path(tmp) / 'bench.sqlite3'}", emu.base_url, str(seeds_file), prefix,
            "-1" if depth is None else str(depth), str(concurrency), "bound" if bound else "",
        ]  # fmt: skip
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=_child_env())
    if done.returncode != 0:
        raise SystemExit(f"bench: the crawl failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def upstream_alone(emu: Emulator, names: list[str], concurrency: int) -> float:
    """Documents/s a bare client in a child process gets from `emu` for `names` (batches of
    20, `concurrency` at once): the upstream's own bound on this machine."""
    with tempfile.TemporaryDirectory() as tmp:
        names_file = Path(tmp) / "names.txt"
        names_file.write_text("\n".join(names) + "\n")
        args = [
            sys.executable, "-m", "bench.bench_crawl", "--bare-child",
            emu.base_url, str(names_file), str(concurrency),
        ]  # fmt: skip
        done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=_child_env())
    if done.returncode != 0:
        raise SystemExit(f"bench: the bare client failed:\n{done.stderr}")
    return len(names) / float(done.stdout)


def bare_child(argv: list[str]) -> None:
    """The bare client (in the child): fetch every batch, read its bytes, print the seconds."""
    import http.client
    import threading
    from urllib.parse import quote, urlsplit

    base, names_file, concurrency = argv
    names = Path(names_file).read_text().split()
    paths = [
        "/v1/documents:batchGet?"
        + "&".join(f"names={quote(n, safe='/')}" for n in names[i : i + 20])
        for i in range(0, len(names), 20)
    ]
    host = urlsplit(base)
    lock = threading.Lock()

    def worker() -> None:
        conn = http.client.HTTPConnection(host.hostname or "", host.port)
        while True:
            with lock:
                if not paths:
                    break
                path = paths.pop()
            conn.request("GET", path, headers={"X-Goog-Api-Key": "test-key"})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or not body:
                raise SystemExit(f"bare client: HTTP {response.status}")
        conn.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(int(concurrency))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(time.perf_counter() - start)


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def child(argv: list[str]) -> None:
    """The crawl itself (in the child): open the store, crawl, print JSON."""
    import resource

    from mirror.config import Settings
    from mirror.service import Mirror
    from mirror.service.crawl import CrawlOptions, make_spec

    db, upstream, seeds_file, prefix, depth, concurrency, bound = argv
    seeds = Path(seeds_file).read_text().split()
    # Words only: this bench times the write path; the embedding every write now adds by
    # default is timed by bench_import_embed, beside its own baseline.
    settings = Settings(
        db_url=db, upstream=upstream, api_key="test-key", get_per_minute=10_000_000, semantic=False
    )
    spec = make_spec(seeds, prefixes=[prefix], max_depth=None if depth == "-1" else int(depth))
    with Mirror(settings) as mirror:
        mirror.stats()  # open and migrate the store outside the timed part
        start, cpu = time.perf_counter(), time.process_time()
        report = mirror.crawl(spec, CrawlOptions(concurrency=int(concurrency)))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    rss_kb = peak_rss_kb() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "report": report.to_json(),
                "rss_mb": rss_kb / 1024,
                "store_seconds": store_bound(db, 20, "bound.sqlite3") if bound else None,
                "grouped_seconds": (
                    store_bound(db, GROUP_DOCUMENTS, "grouped.sqlite3") if bound else None
                ),
            }
        )
    )


def peak_rss_kb() -> int | None:
    """This process's own peak RSS (KiB) on Linux, else None.

    Not ru_maxrss: Linux carries the parent's high-water mark over fork and exec into the
    child's, so a child started by a bench holding a 50,000-page emulator "peaked" at the
    parent's size. VmHWM belongs to the address space exec made.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def store_bound(db: str, per: int, target_file: str) -> float:
    """Seconds to write the crawled documents again, `per` per transaction, into a fresh
    store: what the store alone (documents + search index + commit) costs, with no network."""
    from mirror.store.store import Store

    source = Store.open(db)
    target = Store.open(db.replace("bench.sqlite3", target_file))
    try:
        batch: list[Any] = []
        seconds = 0.0
        for doc in source.iter_documents():
            batch.append(doc)
            if len(batch) == per:
                start = time.perf_counter()
                target.put(batch, fetched_at=0.0, upstream="bench")
                seconds += time.perf_counter() - start
                batch = []
        start = time.perf_counter()
        target.put(batch, fetched_at=0.0, upstream="bench")
        return seconds + time.perf_counter() - start
    finally:
        source.close()
        target.close()


def report_line(
    label: str,
    result: dict[str, Any],
    concurrency: int,
    latency: float,
    upstream_rate: float | None = None,
) -> float:
    """Print one run's numbers against the ideal and the measured bounds; return its ratio to
    the ideal."""
    rep = result["report"]
    stored = rep["fetched"] + rep["alreadyHad"]
    if rep["failed"] or rep["missing"]:
        raise SystemExit(
            f"bench: {label}: {len(rep['failed'])} failed, {len(rep['missing'])} missing"
        )
    rate = stored / result["seconds"]
    ideal = concurrency * 20 / latency
    bounds = [f"ideal {ideal:5.0f} ({rate / ideal:.2f}x)"]
    if upstream_rate:
        bounds.append(f"upstream alone {upstream_rate:5.0f} ({rate / upstream_rate:.2f}x)")
    if result["store_seconds"]:
        store_rate = stored / result["store_seconds"]
        grouped_rate = stored / result["grouped_seconds"]
        bounds.append(f"store alone {store_rate:5.0f} ({rate / store_rate:.2f}x)")
        bounds.append(f"grouped {grouped_rate:5.0f} ({rate / grouped_rate:.2f}x)")
        lower = min(ideal, grouped_rate, upstream_rate or ideal)
        bounds.append(f"lower bound {rate / lower:.2f}x")
    print(
        f"{label:<24} c={concurrency:<2} {stored:6d} docs {result['seconds']:6.2f} s "
        f"{rate:5.0f} docs/s  {', '.join(bounds)}  "
        f"CPU {result['cpu_seconds'] * 1000 / stored:.2f} ms/doc  {rep['requests']} requests  "
        f"peak RSS {result['rss_mb']:.0f} MB",
        flush=True,
    )
    return rate / ideal


def main() -> None:
    """Crawl the corpus at each concurrency, then (optionally) a large synthetic site."""
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-child":
        bare_child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser()
    add_corpus_option(parser)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument(
        "--synthetic", type=int, default=0, metavar="N",
        help="also crawl N synthetic pages from one seed, and 2,000 to compare peak RSS",
    )  # fmt: skip
    parser.add_argument("--pages", type=int, default=0, help="the corpus' first N pages (0: all)")
    args = parser.parse_args()
    docs = with_stubs(load(english_corpus(args.corpus))[: args.pages or None])
    corpus_names = [d["name"] for d in docs if not re.fullmatch(r"# [^\n]*\n", d["content"])]
    print(
        f"crawl of {len(corpus_names)} corpus pages (+{len(docs) - len(corpus_names)} linked "
        f"stubs), latency {args.latency * 1000:.0f} ms per request, quotas off, "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    ratios: dict[int, float] = {}
    ceilings: dict[int, float] = {}  # upstream alone, as a ratio to the ideal
    with Emulator(docs) as emu:
        emu.inject(Fault("latency", seconds=args.latency), times=-1)
        for concurrency in args.concurrency:
            emu.reset()
            emu.inject(Fault("latency", seconds=args.latency), times=-1)
            alone = upstream_alone(emu, [d["name"] for d in docs], concurrency)
            ceilings[concurrency] = alone / (concurrency * 20 / args.latency)
            emu.reset()
            emu.inject(Fault("latency", seconds=args.latency), times=-1)
            result = crawl_in_child(emu, corpus_names, CHROME, 1, concurrency)
            ratios[concurrency] = report_line(
                "corpus, depth 1", result, concurrency, args.latency, alone
            )
    if args.synthetic:
        top = max(args.concurrency)
        for count in (2000, args.synthetic):
            site = linked_synthetic(count)
            with Emulator(site) as emu:
                emu.inject(Fault("latency", seconds=args.latency), times=-1)
                result = crawl_in_child(
                    emu,
                    [site[0]["name"]],
                    "documents/docs.example.dev/guide/",
                    None,
                    top,
                    bound=False,
                )
            report_line(f"synthetic {count}, 1 seed", result, top, args.latency)
    if 8 in ratios:
        print(
            f"ratio at concurrency 8: {ratios[8]:.2f}x (target >= 0.7x); on this machine the "
            f"bare client alone, doing nothing with what it reads, reaches {ceilings[8]:.2f}x"
        )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
