"""`@scope`, `@media`, `@container`: a query for a CSS at-rule finds the page about that
at-rule first, not any page with the word (the analyzers drop the `@`; mirror.search.lexical
says how it is kept)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mirror.search import lexical
from mirror.store.store import Store
from tests.pages import page

# Abridged from the corpus: the at-rule's own article, a release note that names it once, and
# pages that say "scope" (of a service worker, of a C++ graph) often and never `@scope`.
AT_SCOPE = page(
    "articles/at-scope",
    "Limit the reach of your selectors with the CSS `@scope` at-rule",
    "# Limit the reach of your selectors with the CSS `@scope` at-rule\n\n"
    "Learn how to use `@scope` to select elements only within a limited subtree of your "
    "DOM.\n\n## The `@scope` at-rule\n\n```css\n@scope (.card) {\n  img {\n    border: "
    "1px solid black;\n  }\n}\n```\n\nThe scoping root of a `@scope` block is `.card`; the "
    "scoping limit sets where the scope ends:\n\n```css\n@scope (.card) to (.content) {\n"
    "  img { border: 1px solid black; }\n}\n```\n",
)
RELEASE = page(
    "blog/new-in-chrome-118",
    "New in Chrome 118",
    "# New in Chrome 118\n\n* Specify scoped styles in your CSS with the `@scope` rule.\n"
    "* Remove the scrollbars with `scrollbar-width`.\n* The Web Serial API ships.\n",
)
WORKER = page(
    "docs/extensions/mv3/service_workers/scope",
    "Service worker scope",
    "# Service worker scope\n\nThe scope of a service worker is the path it controls. A "
    "narrower scope limits which pages it controls; the default scope is the folder of the "
    "script. Change the scope when you register the worker.\n",
)
GRAPH = page(
    "docs/cpp/scope",
    "C++ Scope",
    "# C++ Scope\n\nThe Scope class has value semantics: a Scope object can be copied. The "
    "Scope returned by NewRootScope is the root scope; a child scope names its operations.\n",
)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    opened.put([AT_SCOPE, RELEASE, WORKER, GRAPH], fetched_at=1.0, upstream="test")
    yield opened
    opened.close()


def _names(store: Store, query: str) -> list[str]:
    return [hit.name.rsplit("/", 2)[-2] + "/" + hit.name.rsplit("/", 1)[-1]
            for hit in store.rank_documents(query, limit=10)]  # fmt: skip


def test_an_at_rule_finds_the_pages_that_write_it_first(store: Store) -> None:
    found = _names(store, "@scope")
    # The article about it, then the note naming it, then pages with only the word.
    assert found[:2] == ["articles/at-scope", "blog/new-in-chrome-118"], found
    assert set(found[2:]) == {"service_workers/scope", "cpp/scope"}, found
    for query in ("`@scope`", "css @scope", "(@scope)"):
        assert _names(store, query)[0] == "articles/at-scope", query


def test_the_word_alone_ranks_as_before(store: Store) -> None:
    # "scope" is not "@scope": the pages that say it most still come first.
    assert _names(store, "scope")[0] in {"service_workers/scope", "cpp/scope"}


def test_an_at_rule_no_page_writes_still_finds_the_word(store: Store) -> None:
    assert set(_names(store, "@worker")) == {"service_workers/scope"}


def test_addresses_and_words_are_not_at_rules() -> None:
    assert lexical.at_markers("mail user@example.com or a@b") == ""
    assert lexical.at_markers("`@font-face`, (@media) and @tf.function") == (
        "zzatfontface zzatmedia zzattf"
    )
    assert lexical.at_marker("font-face") == lexical.at_marker("FontFace")
