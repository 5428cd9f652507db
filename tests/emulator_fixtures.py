"""Pytest fixtures around the upstream emulator, and a loader for the tests' real-docs corpus.

The corpus is ``tests/data/corpus/``: a small subset of the shared corpus, with the same file
names (one gzipped JSON Document per line), made by ``tests/data/make_corpus_subset.py``. Tests
read only this copy, never ``DK_MIRROR_CORPUS_DIR`` (that is bench/'s), so a clone passes alone.
"""

from __future__ import annotations

import functools
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if __package__:
    from .emulator import Emulator
    from .synthetic import synthetic_documents
else:  # loaded as a top-level module (pytest's rootdir-relative import of tests/)
    from emulator import Emulator
    from synthetic import synthetic_documents

__all__ = ["CORPUS_DIR", "Emulator", "corpus_documents", "synthetic_documents"]

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "corpus"


@functools.cache
def _load(path: Path) -> tuple[dict[str, Any], ...]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return tuple(json.loads(line) for line in lines if line.strip())


def corpus_documents(source: str | None = None) -> list[dict[str, Any]]:
    """Corpus records (fresh dicts, file order); `source` is a file stem such as "tensorflow.org"
    or "developer.chrome.com-en", None for every file."""
    paths = [CORPUS_DIR / f"{source}.jsonl.gz"] if source else sorted(CORPUS_DIR.glob("*.jsonl.gz"))
    if not paths or not all(p.is_file() for p in paths):
        raise FileNotFoundError(f"no corpus file {source or '*'}.jsonl.gz in {CORPUS_DIR}")
    return [dict(record) for path in paths for record in _load(path)]


def _running_emulator() -> Emulator:
    """The 99 tensorflow.org documents, the first 200 English Chrome ones; started."""
    documents = (
        corpus_documents("tensorflow.org") + corpus_documents("developer.chrome.com-en")[:200]
    )
    return Emulator(documents, api_key="test-key").start()


@pytest.fixture(scope="module")
def module_emulator() -> Iterator[Emulator]:
    """One running emulator for a whole module (see `emulator`)."""
    running = _running_emulator()
    yield running
    running.stop()


@pytest.fixture
def emulator(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """A running emulator: the 99 tensorflow.org documents, the first 200 English Chrome ones.

    In a module marked `shared_emulator`, every test gets the module's one emulator, restored
    to how it was built (documents, switches, no requests, faults or quota use): no server
    start per test. Mark only modules whose tests leave no request in flight when they end
    (no latency fault or background client outliving its test), or a late request would be
    counted in the next test."""
    if request.node.get_closest_marker("shared_emulator"):
        shared: Emulator = request.getfixturevalue("module_emulator")
        shared.restore()
        yield shared
        return
    running = _running_emulator()
    yield running
    running.stop()
