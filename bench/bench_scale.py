"""A million documents: how each command's cost grows with the store (issue 15).

Usage: python -m bench.bench_scale [--sizes 10000,100000] [--cache DIR] [--queries 200]
                                   [--rebuild] [--corpus DIR]

For each size N it builds (once, then reuses) a synthetic store of N documents drawn from the
shared corpus' real vocabulary (bench.bench_search.Synthetic: headings, paragraphs, code; about
6 KB a page), imported with `dk-mirror import` from JSON Lines files of at most 100,000
documents each (so the 1M store is ten imports, the last into a 900k store). Then it measures:
store file / Markdown bytes; offline search p50/p99 for one common word and for two words;
import peak memory (RSS of the import process, last file, and its private part: RSS also
counts the index files tantivy maps while it merges segments) and documents/s; `status` time;
`ls` piped to `head` (wall time to the first 10 lines and until `ls` exits); `snapshot export`
and `snapshot verify` peak memory (and export speed against sha256 + gzip of the same bytes);
warm `get` of 20 names against raw sqlite3. Each figure is printed with its growth between
sizes (flat, log or linear) and the issue's target at 1M.

Files go to --cache (default: ~/.cache/dk-mirror-bench/scale),
never into the checkout. A store is rebuilt when its schema revision changes or with --rebuild.
Disk: about 3.6x the Markdown bytes per store (10k: 0.2 GB, 100k: 2.2 GB, 1M: ~22 GB before the
search issue's smaller index), plus the generated files (~1/3 of the Markdown, gzipped).
Time on this 2-core machine (shared): 10k about 1 minute; 100k about 6-8 minutes the first time
(generation ~2 min, import ~1 min, export ~2 min), 2-3 minutes once cached; 1M about an hour
the first time. Peak memory figures come from the child processes' ru_maxrss; private memory
from sampling their RssAnon (bench.common.PrivatePeak).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path

from bench.common import ROOT, PrivatePeak, add_corpus_option, inflated, pct
from mirror.store.db import compression

# Documents per generated import file: the issue measures import per 100k file.
FILE_DOCS = 100_000


def cache_dir(given: str | None) -> Path:
    """Where generated files and stores are kept between runs (outside the checkout)."""
    folder = Path(given) if given else Path.home() / ".cache" / "dk-mirror-bench" / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _synthetic(corpus_dir: str | None):  # type: ignore[no-untyped-def]
    from bench.bench_search import Synthetic, corpus

    return Synthetic(corpus(corpus_dir))


def generate(path: Path, start: int, count: int, synthetic: object) -> None:
    """Write documents start..start+count as JSON Lines (gzip level 1), atomically."""
    tmp = path.with_suffix(".part")
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1) as out:
        for i in range(start, start + count):
            doc = synthetic.document(i)  # type: ignore[attr-defined]
            out.write(json.dumps(doc.to_api(), ensure_ascii=False) + "\n")
    tmp.replace(path)


def files_for(cache: Path, size: int) -> list[tuple[Path, int, int]]:
    """The import files (path, first document, count) a store of `size` is built from."""
    out = []
    for start in range(0, size, FILE_DOCS):
        count = min(FILE_DOCS, size - start)
        out.append((cache / f"docs-{start}-{count}.jsonl.gz", start, count))
    return out


def child_env() -> dict[str, str]:
    """The environment of the timed commands: this checkout's code, and bytecode cached as an
    installed package has it (PYTHONDONTWRITEBYTECODE would make every `status` compile
    every module again: 0.15 s of CPU, more than the command's own work). Words only
    (DK_MIRROR_SEMANTIC=off): the import's embedding is bench_import_embed's to time."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), DK_MIRROR_SEMANTIC="off")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_child(args: list[str], *, stdout: int | None = subprocess.DEVNULL) -> tuple[float, int]:
    """Run `python -m mirror ARGS`; (wall seconds, peak RSS bytes). Fails loudly on error."""
    seconds, peak, _ = run_measured(args, stdout=stdout)
    return seconds, peak


def run_measured(
    args: list[str], *, stdout: int | None = subprocess.DEVNULL
) -> tuple[float, int, int]:
    """Run `python -m mirror ARGS`; (wall seconds, peak RSS bytes, peak private bytes)."""
    env = child_env()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mirror", *args], stdout=stdout, stderr=subprocess.PIPE, env=env
    )
    private = PrivatePeak(proc.pid)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    private_peak = private.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench: dk-mirror {' '.join(args)} failed:\n{err.decode()}")
    return seconds, usage.ru_maxrss * 1024, private_peak


def revision() -> str:
    """The schema revision this checkout writes (a cached store of another one is rebuilt)."""
    from mirror.store.db.sql import SCHEMA_REVISION

    return SCHEMA_REVISION


def build(cache: Path, size: int, rebuild: bool, corpus_dir: str | None) -> dict[str, float]:
    """The store of `size` documents (built once); the import figures of its last file."""
    db = cache / f"store-{size}.sqlite3"
    stamp = cache / f"store-{size}.json"
    if not rebuild and db.exists() and stamp.exists():
        recorded = json.loads(stamp.read_text())
        if recorded.get("revision") == revision():
            return dict(recorded["import"])
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    shutil.rmtree(f"{db}-search", ignore_errors=True)  # its search index (text_index.py)
    synthetic = None
    figures: dict[str, float] = {}
    for path, start, count in files_for(cache, size):
        _wait_for_writer(path)
        if not path.exists():
            synthetic = synthetic or _synthetic(corpus_dir)
            began = time.perf_counter()
            generate(path, start, count, synthetic)
            print(f"  generated {path.name} in {time.perf_counter() - began:.0f} s", flush=True)
        seconds, peak, private = run_measured(["import", str(path), "--db", str(db)])
        figures = {
            "docs_per_s": count / seconds,
            "peak": peak,
            "private": private,
            "file_docs": count,
        }
        print(
            f"  imported {path.name}: {count / seconds:,.0f} docs/s, peak {peak / 1e6:.0f} MB"
            f" (private {private / 1e6:.0f} MB)",
            flush=True,
        )
    stamp.write_text(json.dumps({"revision": revision(), "import": figures}))
    return figures


def _wait_for_writer(path: Path, quiet: float = 120.0) -> None:
    """Wait while another process generates `path` (its .part file still growing), so two runs
    sharing a cache never write the same file at once."""
    part = path.with_suffix(".part")
    while not path.exists():
        try:
            if time.time() - part.stat().st_mtime >= quiet:
                return  # left behind by a run that stopped: generate it again
        except FileNotFoundError:
            return
        time.sleep(5)


def ls_head(db: Path, lines: int = 10) -> tuple[float, float]:
    """`dk-mirror ls` piped to a reader that stops after `lines` lines: (seconds to those
    lines, seconds until ls exits after the pipe closes)."""
    env = child_env()
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mirror", "ls", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdout is not None
    for _ in range(lines):
        proc.stdout.readline()
    first = time.perf_counter() - start
    proc.stdout.close()  # as `head` does: ls then fails its next write and stops
    proc.wait()
    return first, time.perf_counter() - start


def gzip_baseline(snapshot: Path) -> tuple[float, int]:
    """Seconds for sha256 + gzip (the snapshot's level) over the snapshot's uncompressed bytes,
    streamed; and how many bytes those were."""
    from mirror.snapshots.format import COMPRESSLEVEL

    total = 0
    spent = 0.0
    digest = hashlib.sha256()
    packer = zlib.compressobj(COMPRESSLEVEL, zlib.DEFLATED, 31)
    with gzip.open(snapshot, "rb") as f:
        while block := f.read(1 << 20):
            start = time.perf_counter()
            digest.update(block)
            packer.compress(block)
            spent += time.perf_counter() - start
            total += len(block)
    start = time.perf_counter()
    packer.flush()
    return spent + time.perf_counter() - start, total


def search_latency(db: Path, size: int, queries: int, corpus_dir: str | None) -> dict[str, float]:
    """p50/p99 seconds of offline search (Store.search_local, limit 5) per query mix."""
    from bench.bench_search import Synthetic
    from mirror.store.store import Store

    synthetic: Synthetic = _synthetic(corpus_dir)
    store = Store.open(f"sqlite:///{db}")
    out: dict[str, float] = {}
    try:
        for words in (1, 2):
            mix = synthetic.queries(queries, words, size)
            for q in mix[:10]:
                store.search_local(q)  # warm
            times = []
            for q in mix:
                start = time.perf_counter()
                store.search_local(q, limit=5)
                times.append(time.perf_counter() - start)
            out[f"search{words}_p50"] = pct(times, 50)
            out[f"search{words}_p99"] = pct(times, 99)
    finally:
        store.close()
    return out


def get20_ratios(db: Path, rounds: int = 500) -> tuple[float, float]:
    """Median Mirror.get_documents of 20 names over median raw sqlite3 of the same names: the
    raw rows as stored, and the raw rows with their Markdown inflated (the stored content is
    zlib-compressed on SQLite, so that is the least any reader of the text does)."""
    from mirror.config import Settings
    from mirror.service import Mirror

    raw = sqlite3.connect(db)
    count = raw.execute("SELECT count(*) FROM documents").fetchone()[0]
    rng = random.Random(42)
    names = [
        f"documents/bench.example/{i // 1000}/page-{i}"
        for i in (rng.randrange(count) for _ in range(rounds * 20))
    ]
    draws = [names[i : i + 20] for i in range(0, len(names), 20)]
    query = f"SELECT * FROM documents WHERE name IN ({','.join('?' * 20)})"
    mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True))
    try:
        for draw in draws:  # warm: every draw read once by both
            raw.execute(query, draw).fetchall()
            mirror.get_documents(draw)
        ours = pct(_times(lambda d: mirror.get_documents(d), draws), 50)
        base = pct(_times(lambda d: raw.execute(query, d).fetchall(), draws), 50)
        text = pct(_times(lambda d: inflated(raw.execute(query, d)), draws), 50)
    finally:
        mirror.close()
        raw.close()
    return ours / base, ours / text


def _times(func: Callable[[list[str]], object], draws: list[list[str]]) -> list[float]:
    out = []
    for draw in draws:
        start = time.perf_counter()
        func(draw)
        out.append(time.perf_counter() - start)
    return out


def measure(
    cache: Path, size: int, imported: dict[str, float], queries: int, corpus_dir: str | None
) -> dict[str, float]:
    """Every figure of the table for the store of `size`."""
    from bench.bench_search import index_bytes

    db = cache / f"store-{size}.sqlite3"
    fig: dict[str, float] = {
        "import_peak": imported["peak"],
        # A store cached before this figure existed has none: "-" in the table.
        "import_private": imported.get("private", float("nan")),
        "import_rate": imported["docs_per_s"],
    }
    with sqlite3.connect(db) as conn:
        # The Markdown's own bytes: the store keeps it compressed (mirror/store/db/compression.py).
        compression.register(conn)
        markdown = conn.execute(
            "SELECT coalesce(sum(length(CAST(dk_inflate(content) AS BLOB))), 0) FROM documents"
        ).fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    fig["space"] = (db.stat().st_size + index_bytes(db)) / markdown
    fig["status"] = min(run_child(["status", "--db", str(db)])[0] for _ in range(3))
    heads = [ls_head(db) for _ in range(3)]
    fig["ls_head"] = min(h[0] for h in heads)
    fig["ls_exit"] = min(h[1] for h in heads)
    snap = cache / f"snap-{size}.jsonl.gz"
    seconds, fig["export_peak"] = run_child(["snapshot", "export", str(snap), "--db", str(db)])
    base_s, raw_bytes = gzip_baseline(snap)
    fig["export_ratio"] = base_s / seconds
    fig["export_mb_s"] = raw_bytes / 1e6 / seconds
    fig["verify_peak"] = run_child(["snapshot", "verify", str(snap)])[1]
    snap.unlink()
    fig.update(search_latency(db, size, queries, corpus_dir))
    fig["get20"], fig["get20_text"] = get20_ratios(db)
    return fig


# (key, label, unit, target at 1M as text, lower is better)
ROWS = [
    ("space", "store file / Markdown bytes", "x", "<= 1.8x"),
    ("search1_p50", "offline search, one common word, p50", "ms", "<= 20 ms"),
    ("search1_p99", "offline search, one common word, p99", "ms", "<= 100 ms"),
    ("search2_p50", "offline search, two words, p50", "ms", "<= 20 ms"),
    ("search2_p99", "offline search, two words, p99", "ms", "<= 100 ms"),
    ("import_peak", "import peak RSS (last file; with mapped index files)", "MB", "<= 200 MB"),
    ("import_private", "import peak private memory (last file)", "MB", "<= 200 MB"),
    ("import_rate", "import documents/s (last file)", "/s", ">= 2,000/s"),
    ("status", "`status` (whole command)", "s", "< 0.5 s"),
    ("ls_head", "`ls | head` (first 10 lines)", "s", "at once"),
    ("ls_exit", "`ls | head` (ls exits)", "s", "at once"),
    ("export_peak", "snapshot export peak memory", "MB", "<= 200 MB"),
    ("export_ratio", "snapshot export speed / sha256+gzip", "x", ">= 0.8x"),
    ("verify_peak", "snapshot verify peak memory", "MB", "<= 200 MB"),
    ("get20", "warm get of 20 / raw sqlite3", "x", "flat"),
    ("get20_text", "warm get of 20 / raw sqlite3 + inflate", "x", "flat"),
]


def show(value: float, unit: str) -> str:
    """A figure in its unit ("-": not measured, a figure cached before it existed)."""
    if value != value:  # nan
        return "-"
    if unit == "ms":
        return f"{value * 1000:.1f} ms"
    if unit == "MB":
        return f"{value / 1e6:.0f} MB"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "s":
        return f"{value:.2f} s"
    return f"{value:.2f}x"


def growth(before: float, after: float, factor: float) -> str:
    """How a figure grew between two sizes `factor` apart: flat, log or linear."""
    if before <= 0:
        return "?"
    ratio = after / before
    if ratio < 1.5:
        return "flat"
    if ratio < factor / 2:
        return "log"
    return "linear"


def table(sizes: list[int], figures: dict[int, dict[str, float]]) -> str:
    """The issue's table: one row per figure, one column per size, growth, target."""
    head = ["figure", *(f"{s:,}" for s in sizes), "growth", "target at 1M"]
    rows = [head]
    for key, label, unit, target in ROWS:
        values = [figures[s].get(key, float("nan")) for s in sizes]  # nan: not measured
        grew = [
            growth(values[i], values[i + 1], sizes[i + 1] / sizes[i]) for i in range(len(sizes) - 1)
        ]
        rows.append([label, *(show(v, unit) for v in values), ", ".join(grew) or "-", target])
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def main() -> None:
    """Build (or reuse) each store, measure it, print the table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    parser.add_argument("--cache", help="where files and stores are kept (default ~/.cache/...)")
    parser.add_argument("--queries", type=int, default=200, help="queries per search mix")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the stores")
    add_corpus_option(parser)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    cache = cache_dir(args.cache)
    figures: dict[int, dict[str, float]] = {}
    for size in sizes:
        print(f"{size:,} documents:", flush=True)
        imported = build(cache, size, args.rebuild, args.corpus)
        figures[size] = measure(cache, size, imported, args.queries, args.corpus)
        # Kept beside the store: a run that stops later still leaves this size's figures.
        (cache / f"figures-{size}.json").write_text(json.dumps(figures[size], indent=1))
        shown = ", ".join(f"{key} {show(figures[size][key], unit)}" for key, _, unit, _ in ROWS)
        print(f"  {shown}; export {figures[size]['export_mb_s']:.1f} MB/s", flush=True)
    print(table(sizes, figures))


if __name__ == "__main__":
    main()
