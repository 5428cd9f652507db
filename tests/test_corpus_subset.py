"""The tests' own corpus (tests/data/corpus): present, small, valid, and all the tests read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mirror.models import Document
from tests.emulator_fixtures import CORPUS_DIR, corpus_documents
from tests.test_search_quality import QUERIES

STEMS = ["developer.chrome.com-en", "developer.chrome.com-intl", "tensorflow.org"]


def test_the_subset_is_a_few_megabytes_of_three_files() -> None:
    files = sorted(CORPUS_DIR.glob("*.jsonl.gz"))
    assert [f.name.removesuffix(".jsonl.gz") for f in files] == STEMS
    assert sum(f.stat().st_size for f in files) < 3_000_000


@pytest.mark.parametrize("stem", STEMS)
def test_each_file_is_sorted_unique_documents(stem: str) -> None:
    records = corpus_documents(stem)
    names = [r["name"] for r in records]
    assert names == sorted(set(names))
    for record in records:
        document = Document.from_api(record)
        assert document.name == record["name"] and document.content


def test_it_holds_what_the_fixtures_slice() -> None:
    # The emulator fixture serves all tensorflow pages and the first 200 English Chrome pages;
    # tests/test_pins.py takes 60 international pages.
    assert len(corpus_documents("tensorflow.org")) == 99
    assert len(corpus_documents("developer.chrome.com-en")) > 200
    assert len(corpus_documents("developer.chrome.com-intl")) >= 60


def test_every_page_the_search_queries_expect_is_there() -> None:
    names = {r["name"] for r in corpus_documents()}
    missing = [e for _, e in QUERIES if "documents/" + e not in names]
    assert not missing, f"rerun tests/data/make_corpus_subset.py to add {missing}"


def test_the_loader_never_reads_the_bench_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DK_MIRROR_CORPUS_DIR is bench/'s; a test that followed it would pass only beside it.
    record = {"name": "documents/z.dev/a", "uri": "https://z.dev/a", "content": "x"}
    with gzip.open(tmp_path / "z.dev.jsonl.gz", "wt", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
    monkeypatch.setenv("DK_MIRROR_CORPUS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"z\.dev"):
        corpus_documents("z.dev")
    assert record not in corpus_documents()
    assert "documents/www.tensorflow.org/hub/caching" in {r["name"] for r in corpus_documents()}
