"""Helpers shared by the bench scripts: where the corpus is, timing, percentiles."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def corpus_dir() -> Path:
    """shared/corpus beside the checkout, or DK_MIRROR_CORPUS_DIR."""
    override = os.environ.get("DK_MIRROR_CORPUS_DIR")
    path = Path(override) if override else ROOT.parent / "shared" / "corpus"
    if not path.is_dir():
        raise SystemExit(f"corpus not found at {path}; set DK_MIRROR_CORPUS_DIR")
    return path


def english_corpus() -> Path:
    """The ~2,000-document developer.chrome.com English corpus file."""
    return corpus_dir() / "developer.chrome.com-en.jsonl.gz"


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
