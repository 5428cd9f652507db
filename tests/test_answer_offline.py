"""`answer --offline` on a real store of corpus pages: it leads with a passage of the page that
`search --offline` ranks first, quoted as prose (never a heading, never HTML or Markdown)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.models import Document
from mirror.search.extractive import LABEL
from mirror.service import Mirror
from mirror.store.store import Store

from .emulator_fixtures import corpus_documents
from .store_templates import StoreTemplates

# The cookies API's reference page and the pages that outrank it lexically for its name.
_CHROME = ("/extensions/reference/cookies", "/mv3/storage-and-cookies", "/reference/storage")


def _build(url: str) -> None:
    records = corpus_documents("tensorflow.org") + [
        r for r in corpus_documents("developer.chrome.com-en") if r["name"].endswith(_CHROME)
    ]
    store = Store.open(url)
    try:
        store.put([Document.from_api(r) for r in records], fetched_at=0.0, upstream="test")
    finally:
        store.close()


@pytest.fixture
def pages(tmp_path: Path, store_templates: StoreTemplates) -> Iterator[Mirror]:
    """An offline Mirror on a store of the tensorflow.org pages and a few Chrome ones."""
    url = store_templates.copy("answer-pages", _build, tmp_path / "store.sqlite3")
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        yield mirror


def _lead(text: str) -> str:
    """The first quotation of an answer's text, without its citation mark."""
    assert text.startswith(LABEL)
    return re.sub(r" \[1\]$", "", text.split("\n")[1])


def _headings(markdown: str) -> set[str]:
    return {m.strip(" #") for m in re.findall(r"(?m)^#{1,6} [^\n]+", markdown)}


@pytest.mark.parametrize(
    "question",
    [
        # Once answered with the caching page's title heading, quoted as if it were a sentence.
        "How do I cache TF Hub model downloads?",
        # The answer sits in a cell of an HTML table, beside `<br/><div style="...">`.
        "Does hub.KerasLayer fill in graph collections?",
        # An API's name: search puts the page documenting it first (the symbol index).
        "chrome.cookies",
    ],
)
def test_the_answer_leads_with_prose_from_the_first_search_result(pages, question):
    first = pages.search_documents(question, page_size=5).page.results[0].parent
    answer = pages.answer_query(question).answer
    assert answer.reference_names[0] == first
    lead = _lead(answer.answer_text)
    content = pages.get_documents([first]).documents[0].content or ""
    assert lead not in _headings(content)
    assert not re.search(r"</?[a-z]+[ />]|style=|\*\*|\]\(|\{%|\{:|^#", lead), lead
    # A citation spans exactly the quotation.
    span = answer.citations[0]
    assert answer.answer_text.encode()[span.start_index : span.end_index].decode() == lead


def test_a_quotation_from_an_html_table_stays_in_its_cell(pages):
    answer = pages.answer_query("Does hub.KerasLayer fill in graph collections?").answer
    assert _lead(answer.answer_text) == (
        "Note: hub.KerasLayer does not fill in graph collections like the old "
        "tf.compat.v1.layers or hub.Module APIs did."
    )
