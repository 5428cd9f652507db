"""Pages of offline results (`--page-token`) never split a document's chunks: a page that
would end between a document's best chunk and its second one ends before that document,
and the next page opens with it whole, so no document is shown on two pages; read in turn,
the pages hold exactly the chunks of one long page, in its order."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.models import Document
from tests.cli_store import stored_for_cli
from tests.emulator_fixtures import corpus_documents

QUERY = "save and load a keras model"


@pytest.fixture
def tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    docs = [Document.from_api(r) for r in corpus_documents("tensorflow.org")]
    return stored_for_cli(tmp_path, monkeypatch, docs)


def _page(limit: int, token: str | None = None) -> tuple[list[tuple[str, str]], str | None]:
    args = ["search", "--offline", "--json", "--limit", str(limit), QUERY]
    found = CliRunner().invoke(cli, [*args, "--page-token", token] if token else args)
    assert found.exit_code == 0, found.output
    body = json.loads(found.stdout)
    return [(r["parent"], r["id"]) for r in body["results"]], body.get("nextPageToken")


def test_pages_of_results_never_show_a_document_twice(tensorflow: Path) -> None:
    whole, _ = _page(30)
    # A page size whose first page would end between a document's two chunks.
    size = next(i for i in range(3, len(whole)) if whole[i][0] == whole[i - 1][0])
    pages: list[list[tuple[str, str]]] = []
    token = None
    while sum(len(p) for p in pages) < size * 3:
        page, token = _page(size, token)
        assert page and len(page) <= size and token, pages
        pages.append(page)
    assert len(pages[0]) == size - 1  # ended before the document that would be split
    for before, after in itertools.pairwise(pages):
        assert not {p for p, _ in before} & {p for p, _ in after}, (before, after)
    read = [chunk for page in pages for chunk in page]
    assert read == whole[: len(read)]
