"""Helpers shared by the bench scripts: where the corpus is, timing, percentiles."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
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
