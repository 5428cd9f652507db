"""Snippets and extractive answers of a question in another language: its articles and
prepositions ("con", "un", "de", "la") are not marked, as its ranking leaves them out
(mirror.search.language), and as English stop words are not; its content words are."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.models import Document
from tests.cli_store import stored_for_cli
from tests.emulator_fixtures import corpus_documents

# Real Spanish pages of tests/data/corpus; the question's content words are in them.
QUESTION = "¿cómo detectar con la API si el usuario está inactivo en un sitio?"
FUNCTION_WORDS = {"cómo", "con", "la", "si", "el", "está", "en", "un"}


@pytest.fixture
def spanish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    records = corpus_documents("developer.chrome.com-intl")
    docs = [Document.from_api(r) for r in records if "/es/" in r["name"] and r.get("content")]
    return stored_for_cli(tmp_path, monkeypatch, docs)


def test_a_spanish_question_marks_its_words_not_its_articles(spanish: Path) -> None:
    searched = CliRunner().invoke(cli, ["search", "--offline", QUESTION])
    assert searched.exit_code == 0, searched.output
    assert "/es/articles/idle-detection" in searched.stdout
    marked = {m.casefold() for m in re.findall(r"\*\*([^*]+)\*\*", searched.stdout)}
    assert marked & {"detectar", "usuario", "inactivo", "api"}, searched.stdout
    assert not marked & FUNCTION_WORDS, marked & FUNCTION_WORDS


def test_a_spanish_answer_quotes_for_its_content_words(spanish: Path) -> None:
    from mirror.search import quotes

    keys = quotes.question_keys(QUESTION)
    assert not {k for k in keys if k in FUNCTION_WORDS}, keys
    answered = CliRunner().invoke(cli, ["answer", "--offline", QUESTION])
    assert answered.exit_code == 0, answered.output
    assert "[1] documents/developer.chrome.com/es/" in answered.stdout
