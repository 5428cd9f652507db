"""A query that is an API name ranks the page named after it first (mirror.search.named_pages),
in `search --offline` and in the page an offline answer quotes first."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.models import Document
from mirror.policy import Mode
from mirror.search.named_pages import key, named_first
from mirror.service import Mirror
from mirror.store.store import Store

SITE = "developer.chrome.com"
GUIDE = f"documents/{SITE}/docs/web-platform/navigation-api"
POST = f"documents/{SITE}/blog/navigateevent-intercept"
OTHER = f"documents/{SITE}/blog/new-in-chrome-105"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NavigateEvent.intercept()", "navigateeventintercept"),
        ("navigateevent-intercept", "navigateeventintercept"),
        ("externally_connectable", "externallyconnectable"),
        ("  showPicker ", "showpicker"),
        ("()", ""),
    ],
)
def test_a_name_and_a_page_name_compare_by_letters_and_digits(text: str, expected: str) -> None:
    assert key(text) == expected


def test_named_pages_move_ahead_keeping_their_order() -> None:
    ranking = ["a/guide", "x/reportingobserver", "b/other", "y/reporting-observer/"]
    moved = named_first("ReportingObserver", ranking, lambda name: name)
    assert moved == ["x/reportingobserver", "y/reporting-observer/", "a/guide", "b/other"]


def test_a_ranking_without_a_named_page_is_left_as_it_is() -> None:
    ranking = ["a/guide", "b/reporting"]
    assert named_first("ReportingObserver", ranking, lambda name: name) == ranking


def _page(name: str, title: str, content: str) -> Document:
    path = name.removeprefix(f"documents/{SITE}/")
    return Document(
        name=name, uri=f"https://{SITE}/{path}", title=title, content=content, data_source=SITE
    )


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    # A guide that names the call in every section, and the post about it that names it twice:
    # by words alone the guide ranks first.
    guide = "\n\n".join(
        f"## Step {n}\n\nCall `NavigateEvent.intercept()` to handle the navigation in the page."
        for n in range(10)
    )
    post = (
        "# Handling navigations\n\n`NavigateEvent.intercept()` replaces `transitionWhile()`.\n\n"
        + "Long prose about the change, the migration and what it means for routers. " * 20
        + "\n\nUse `NavigateEvent.intercept()` from Chrome 105."
    )
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = Store.open(url)
    try:
        store.put(
            [
                _page(GUIDE, "Modern client-side routing: the Navigation API", guide),
                _page(POST, "Renaming transitionWhile", post),
                _page(OTHER, "New in Chrome 105", "Handle the navigation in the page."),
            ],
            fetched_at=0.0,
            upstream="test",
        )
    finally:
        store.close()
    opened = Mirror(Settings(db_url=url, offline=True, semantic=False))
    yield opened
    opened.close()


def _search(mirror: Mirror, query: str) -> list[tuple[str, float]]:
    page = mirror.search_documents(query, page_size=10, mode=Mode(offline=True)).page
    return [(r.parent, r.relevance_score or 0.0) for r in page.results]


def test_an_api_name_finds_the_page_named_after_it_first(mirror: Mirror) -> None:
    found = _search(mirror, "NavigateEvent.intercept()")
    pages = list(dict.fromkeys(name for name, _ in found))
    assert pages[:2] == [POST, GUIDE]
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)  # no score rises down the page


def test_prose_with_the_same_words_is_ranked_by_its_words(mirror: Mirror) -> None:
    # Not an identifier: the page that holds the words most is first, as before.
    found = _search(mirror, "navigate event intercept handle the navigation")
    assert found[0][0] == GUIDE


def test_an_offline_answer_quotes_the_named_page_first(mirror: Mirror) -> None:
    answer = mirror.answer_query("NavigateEvent.intercept()", mode=Mode(offline=True)).answer
    assert answer.references
    assert answer.references[0].parent == POST
