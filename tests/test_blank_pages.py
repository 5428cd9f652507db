"""Pages with nothing but a title sink below the first page of results
(mirror.search.blank_pages), and paging through the results still shows each page once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.policy import Mode
from mirror.search.blank_pages import blank, sunk
from mirror.service import Mirror
from mirror.store.store import Store
from tests.pages import page

SITE = "developer.chrome.com"
LANDING = f"documents/{SITE}/docs/privacy-sandbox"


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("# The Privacy Sandbox\n\n", True),
        ("# extensionTypes\n\n<!-- Intentionally blank -->\n", True),
        ("# Fresher service workers\n\n{% Partial 'deprecations-policy.md' %}\n\n", True),
        ("# {{namespace.name}}\n\n", True),
        ("", True),
        (None, True),
        ("# Policies\n\n{% Partial 'mv2-legacy-page.md' %}\n\nExtension policies\n", False),
        ("# Title\n\n1", False),
        ("Some text without a heading.", False),
        ("#hashtag in text", False),  # not a heading: no space after the mark
    ],
)
def test_a_page_is_blank_when_only_headings_comments_and_template_tags_remain(
    markdown: str | None, expected: bool
) -> None:
    assert blank(markdown) is expected


def test_a_blank_page_sinks_past_the_pages_that_follow_it() -> None:
    ranking = ["B1", "a", "b", "B2", "c", "d", "e"]
    assert sunk(ranking, lambda n: n.startswith("B"), places=2) == [
        "a", "b", "B1", "c", "d", "B2", "e",
    ]  # fmt: skip


def test_a_deeper_ranking_starts_with_the_shallower_one() -> None:
    # What keeps pages of results consistent: the first N of a ranking `places` deeper than N
    # are the first N of any deeper ranking.
    full = [f"{'B' if i % 3 == 0 else 'p'}{i}" for i in range(60)]
    is_blank = lambda n: n.startswith("B")  # noqa: E731
    deepest = sunk(full, is_blank, places=10)
    for n in range(1, 50):
        assert sunk(full[: n + 10], is_blank, places=10)[:n] == deepest[:n]


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    # Two landing pages are the title alone, as upstream serves section landings; 14 pages
    # about the sandbox say less about it in their titles.
    pages = [
        page("docs/privacy-sandbox", "The Privacy Sandbox", "# The Privacy Sandbox\n\n"),
        page("es/docs/privacy-sandbox", "Privacy Sandbox", "# Privacy Sandbox\n\n"),
    ]
    pages += [
        page(
            f"blog/update-{n}",
            f"Update {n}",
            f"# Update {n}\n\nNews of the privacy sandbox, part {n}: "
            + "what changed in the proposals this month. " * (n + 1),
        )
        for n in range(14)
    ]
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = Store.open(url)
    try:
        store.put(pages, fetched_at=0.0, upstream="test")
        by_words = [hit.name for hit in store.rank_documents("privacy sandbox", limit=2)]
    finally:
        store.close()
    assert LANDING in by_words  # by words alone, the empty pages are the best matches
    assert all(name.endswith("docs/privacy-sandbox") for name in by_words)
    opened = Mirror(Settings(db_url=url, offline=True, semantic=False))
    yield opened
    opened.close()


def test_an_empty_landing_page_is_not_on_the_first_page_of_results(mirror: Mirror) -> None:
    page = mirror.search_documents("privacy sandbox", page_size=10, mode=Mode(offline=True)).page
    shown = [r.parent for r in page.results]
    assert LANDING not in shown
    scores = [r.relevance_score or 0.0 for r in page.results]
    assert scores == sorted(scores, reverse=True)


def test_paging_shows_every_page_once_the_blank_one_included(mirror: Mirror) -> None:
    seen: list[str] = []
    token = None
    for _ in range(20):
        page = mirror.search_documents(
            "privacy sandbox", page_size=3, page_token=token, mode=Mode(offline=True)
        ).page
        seen.extend(dict.fromkeys(r.parent for r in page.results))
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == sorted(set(seen))  # no page twice
    assert len(seen) == 16 and LANDING in seen
