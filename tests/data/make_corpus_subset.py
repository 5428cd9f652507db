"""Make tests/data/corpus/, the subset of the shared corpus that the tests read.

Run from the repository root: `python3 -m tests.data.make_corpus_subset [--corpus DIR]`.
The source is --corpus, else $DK_MIRROR_CORPUS_DIR, else ../shared/corpus beside the checkout.
The same source gives the same bytes: lines are copied verbatim in name order, gzip mtime=0.
Rules, per file (the file names stay those of the shared corpus, so tests say which part):

- tensorflow.org: every page (the emulator fixture, pins, MCP and quality tests use them all).
- developer.chrome.com-en: the first 200 pages by name (the emulator fixture serves exactly
  these, and tests index into them), every page tests/test_search_quality.py expects, the
  NEIGHBOURS pages a plain BM25 ranks highest for each of its queries (the pages the expected
  one must beat), and every BACKGROUND-th page (ordinary pages, so term statistics and the
  long tail stay realistic).
- developer.chrome.com-intl: the first 60 pages by name (tests/test_pins.py).

The neighbour ranking is written out here, not taken from mirror/, so that changing the search
code does not change the data it is judged on.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import os
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "corpus"
NEIGHBOURS = 10
BACKGROUND = 20
FIRST = {"developer.chrome.com-en": 200, "developer.chrome.com-intl": 60}
# Words in nearly every page: they would pick neighbours by "how" and "do".
# fmt: off
STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "is", "it", "its", "me", "my", "of", "on", "or", "should", "so", "that",
    "the", "this", "to", "was", "what", "when", "where", "which", "who", "why", "will", "with",
    "you", "your",
))
# fmt: on
_WORD = re.compile(r"\w+")
TEXT_FIELDS = ("title", "description", "content")


def source_dir(option: str | None) -> Path:
    """--corpus, else $DK_MIRROR_CORPUS_DIR, else shared/corpus beside the checkout."""
    path = Path(option or os.environ.get("DK_MIRROR_CORPUS_DIR") or ROOT.parent / "shared/corpus")
    if not (path / "developer.chrome.com-en.jsonl.gz").is_file():
        raise SystemExit(
            f"no shared corpus in {path}: pass --corpus DIR or set DK_MIRROR_CORPUS_DIR"
        )
    return path


def read_lines(path: Path) -> dict[str, str]:
    """Raw JSON lines by document name."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return {json.loads(line)["name"]: line for line in lines if line.strip()}


def words(text: str) -> list[str]:
    """Lower-case word tokens without stopwords."""
    return [w for w in _WORD.findall(text.casefold()) if w not in STOPWORDS]


def bm25_top(bags: dict[str, Counter[str]], query: str, count: int) -> list[str]:
    """The `count` names a whole-document BM25 (k1=1.2, b=0.75) ranks highest for `query`."""
    terms = set(words(query))
    average = sum(sum(bag.values()) for bag in bags.values()) / len(bags)
    df = {t: sum(1 for bag in bags.values() if t in bag) for t in terms}

    def score(bag: Counter[str]) -> float:
        norm = 1.2 * (0.25 + 0.75 * sum(bag.values()) / average)
        return sum(
            math.log(1 + (len(bags) - df[t] + 0.5) / (df[t] + 0.5)) * bag[t] * 2.2 / (bag[t] + norm)
            for t in terms
            if bag[t]
        )

    ranked = sorted(((score(bag), name) for name, bag in bags.items()), key=lambda s: (-s[0], s[1]))
    return [name for value, name in ranked[:count] if value > 0]


def chrome_en(lines: dict[str, str]) -> set[str]:
    """The English Chrome pages to keep (see the module docstring)."""
    from tests.test_search_quality import QUERIES

    bags = {}
    for name, line in lines.items():
        record = json.loads(line)
        bags[name] = Counter(words(" ".join(record.get(k) or "" for k in TEXT_FIELDS)))
    names = sorted(lines)
    keep = set(names[: FIRST["developer.chrome.com-en"]]) | set(names[::BACKGROUND])
    for query, expected in QUERIES:
        if "documents/" + expected in lines:
            keep.add("documents/" + expected)
        # Chrome pages compete with the TensorFlow ones too: the quality store holds both.
        keep.update(bm25_top(bags, query, NEIGHBOURS))
    return keep


def write(path: Path, lines: dict[str, str], keep: set[str]) -> None:
    """Gzip the kept lines in name order with no timestamp, so the bytes are reproducible."""
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as out:
        for name in sorted(keep):
            out.write(lines[name].rstrip("\n").encode("utf-8") + b"\n")
    path.write_bytes(raw.getvalue())


def main(argv: list[str] | None = None) -> None:
    """Write the three subset files and print what each holds."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="the shared corpus folder")
    source = source_dir(parser.parse_args(argv).corpus)
    OUT.mkdir(exist_ok=True)
    for stem in ("tensorflow.org", "developer.chrome.com-en", "developer.chrome.com-intl"):
        lines = read_lines(source / f"{stem}.jsonl.gz")
        if stem == "developer.chrome.com-en":
            keep = chrome_en(lines)
        else:
            keep = set(sorted(lines)[: FIRST.get(stem, len(lines))])
        target = OUT / f"{stem}.jsonl.gz"
        write(target, lines, keep)
        print(
            f"{target.relative_to(ROOT)}: {len(keep)} of {len(lines)} pages, "
            f"{target.stat().st_size / 1e6:.2f} MB",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
