"""A question that names its page's title finds that page first: a long query's any-of match
scores a title holding every one of its words too (sqlite/search.py, with_title_bonus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.models import Document
from tests.cli_store import stored_for_cli
from tests.emulator_fixtures import corpus_documents

CACHING = "documents/www.tensorflow.org/hub/caching"  # "Caching model downloads from TF Hub"


@pytest.fixture
def tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = [Document.from_api(r) for r in corpus_documents("tensorflow.org")]
    return stored_for_cli(tmp_path, monkeypatch, docs)


def test_a_question_in_its_page_title_words_finds_that_page_first(tensorflow: Path) -> None:
    # The README's own question. By each word's best field alone the page was 4th on these
    # pages, below pages that say "hub" and "model" more often.
    question = "How do I cache TF Hub models?"
    searched = CliRunner().invoke(cli, ["search", "--offline", "--json", "--limit", "3", question])
    assert searched.exit_code == 0, searched.output
    assert json.loads(searched.stdout)["results"][0]["parent"] == CACHING
    answered = CliRunner().invoke(cli, ["answer", "--offline", question])
    assert answered.exit_code == 0, answered.output
    assert f"[1] {CACHING}" in answered.stdout, answered.stdout
