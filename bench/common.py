"""Helpers shared by the bench scripts: where the corpus is, timing, percentiles."""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import statistics
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


CORPUS_ENV = "DK_MIRROR_CORPUS_DIR"


def add_corpus_option(parser: argparse.ArgumentParser) -> None:
    """Add --corpus DIR, the folder of the shared corpus."""
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help=f"the shared corpus folder (default: ${CORPUS_ENV}, else ../shared/corpus)",
    )


def corpus_file(name: str, directory: str | Path | None = None) -> Path:
    """A corpus file: in `directory` (--corpus), else $DK_MIRROR_CORPUS_DIR, else shared/corpus
    beside the checkout. Exits with what is missing and how to point at it, never a traceback."""
    if directory:
        folder, source = Path(directory), "--corpus"
    elif os.environ.get(CORPUS_ENV):
        folder, source = Path(os.environ[CORPUS_ENV]), f"${CORPUS_ENV}"
    else:
        folder, source = ROOT.parent / "shared" / "corpus", "the default, beside the checkout"
    path = folder / name
    if not path.is_file():
        raise SystemExit(
            f"bench: corpus file {name} not found in {folder} ({source}).\n"
            f"The benchmarks read the shared corpus (JSON Lines of Document records); point at "
            f"its folder with --corpus DIR or {CORPUS_ENV}=DIR. The tests need none of it."
        )
    return path


def first_records(path: Path, count: int, folder: Path) -> Path:
    """The first `count` records of the corpus file `path`, as a file of the same name in
    `folder` (a smoke run's corpus)."""
    out = folder / path.name
    with gzip.open(path, "rt", encoding="utf-8") as lines, gzip.open(out, "wt") as kept:
        for line in itertools.islice(lines, count):
            kept.write(line)
    return out


def english_corpus(directory: str | Path | None = None) -> Path:
    """The ~2,000-document developer.chrome.com English corpus file."""
    return corpus_file("developer.chrome.com-en.jsonl.gz", directory)


def timed(func: Callable[[], object], repeat: int) -> list[float]:
    """Wall seconds of `repeat` calls."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100) of samples."""
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def median(samples: list[float]) -> float:
    """The median."""
    return statistics.median(samples)


def ms(seconds: float) -> str:
    """Seconds as milliseconds text."""
    return f"{seconds * 1000:.3f} ms"


def _rss_anon(pid: int) -> int:
    """A process's private memory now, in bytes (0 once it has gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        return 0
    return 0


def _children(pid: int) -> list[int]:
    """The child processes of `pid` (Linux; none where the kernel does not list them)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as listed:
            return [int(p) for p in listed.read().split()]
    except OSError:
        return []


class PrivatePeak:
    """The peak private (anonymous) memory of a running child process, in bytes (Linux).

    Peak RSS (ru_maxrss, VmHWM) also counts the pages of files a process maps: tantivy reads
    its segments through mmap, so an import's RSS rises by the size of the segments it merges
    (page cache, shared and reclaimed by the kernel at need, not memory the process
    allocated). RssAnon is what the process itself holds; the kernel keeps no high-water mark
    of it, so a thread samples it every few milliseconds, summed over the process and its
    children (forked workers count in full, though they share pages with their parent).
    """

    def __init__(self, pid: int, every: float = 0.005) -> None:
        import threading

        self.peak = 0
        self._pid = pid
        self._every = every
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set():
            try:
                # The process and its children (an export's rendering workers) together.
                total = sum(_rss_anon(pid) for pid in [self._pid, *_children(self._pid)])
            except (OSError, ValueError):
                return  # gone (or not Linux)
            self.peak = max(self.peak, total)
            time.sleep(self._every)

    def stop(self) -> int:
        """Stop sampling (once the child has exited); the peak seen, in bytes."""
        self._done.set()
        self._thread.join()
        return self.peak


def target(ratio: float, bound: float, *, at_least: bool, source: str) -> str:
    """A ratio's target as printed next to it, with whether this run meets it:
    "(target <= 2x, issue 2: met)"."""
    met = ratio >= bound if at_least else ratio <= bound
    return (
        f"(target {'>=' if at_least else '<='} {bound:g}x, {source}: {'met' if met else 'MISSED'})"
    )


def inflated(rows: Iterable[Sequence[object]]) -> list[list[object]]:
    """Rows with every compressed value (the stored Markdown: zlib on SQLite) turned back into
    its text: the least any reader of a page's text does after reading its row."""
    return [[zlib.decompress(v).decode() if isinstance(v, bytes) else v for v in r] for r in rows]
