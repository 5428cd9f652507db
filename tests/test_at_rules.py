"""`@scope`, `@media`, `@container`: a query for a CSS at-rule finds the page about that
at-rule first, not any page with the word (the analyzers drop the `@`; mirror.search.lexical
says how it is kept), on SQLite and on PostgreSQL; and a PostgreSQL store indexed before the
markers gets them by its upgrade."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from mirror.search import lexical
from mirror.store.db import engine as engines
from mirror.store.db.migrate import upgrade
from mirror.store.schema.tables import SCHEMA_REVISION
from mirror.store.store import Store
from tests.pages import page

pytestmark = pytest.mark.both_backends

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


def _without_markers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index as the code before the markers did (both backends' ways)."""
    monkeypatch.setattr(lexical, "at_markers", lambda *texts: "")
    monkeypatch.setattr(lexical, "with_at_markers", lambda text: text or "")


def test_the_word_alone_ranks_as_before(
    store: Store,
    db_url: str,
    another_db_url: Callable[[], str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # "scope" is not "@scope": the markers change nothing for the word alone.
    found = _names(store, "scope")
    unmarked = Store.open(another_db_url())
    try:
        with monkeypatch.context() as before:
            _without_markers(before)  # SQLite indexes at the first search: it runs inside
            unmarked.put([AT_SCOPE, RELEASE, WORKER, GRAPH], fetched_at=1.0, upstream="test")
            assert found == _names(unmarked, "scope")
    finally:
        unmarked.close()
    if db_url.startswith("sqlite"):
        # BM25 there: the pages that say it most come first (ts_rank weighs the article's
        # title and headings, which say "scope" in `@scope`, above them).
        assert found[0] in {"service_workers/scope", "cpp/scope"}


def test_an_at_rule_no_page_writes_still_finds_the_word(store: Store) -> None:
    assert set(_names(store, "@worker")) == {"service_workers/scope"}


def test_addresses_and_words_are_not_at_rules() -> None:
    assert lexical.at_markers("mail user@example.com or a@b") == ""
    # After a letter, digit, `_`, `.` or another `@` (non-ASCII letters too) it is no name.
    assert lexical.at_markers("é@a _@b 1@c .@d @@e, x.@f") == ""
    assert lexical.at_markers("@scope at the start, -@layer after a dash") == "zzatscope zzatlayer"
    assert lexical.at_markers("`@font-face`, (@media) and @tf.function") == (
        "zzatfontface zzatmedia zzattf"
    )
    assert lexical.at_marker("font-face") == lexical.at_marker("FontFace")


def test_postgresql_writes_each_marker_before_the_name_it_marks() -> None:
    assert lexical.with_at_markers("use `@scope` (or @font-face-), not a@b.c") == (
        "use `zzatscope @scope` (or zzatfontface @font-face-), not a@b.c"
    )
    assert lexical.with_at_markers("no at-rule here") == "no at-rule here"
    assert lexical.with_at_markers(None) == ""
    # The same markers as SQLite's side column, in the same order.
    text = AT_SCOPE.content or ""
    marked = re.findall(rf"\b{lexical.AT_PREFIX}\w+", lexical.with_at_markers(text))
    assert len(marked) == 6 and marked == lexical.at_markers(text).split()


@pytest.fixture
def blank_pg(postgres_server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A blank (unmigrated) PostgreSQL database."""
    url = postgres_server.fresh_database(migrated=False)
    yield url
    postgres_server.drop_database(url)


def test_a_postgresql_store_indexed_before_the_markers_gets_them_by_its_upgrade(
    blank_pg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = Store(engines.create(blank_pg))
    upgrade(old.engine, "0015")
    # The entries as the code before revision 0016 wrote them: no markers.
    with monkeypatch.context() as before:
        _without_markers(before)
        old.put([AT_SCOPE, RELEASE, WORKER, GRAPH], fetched_at=1.0, upstream="test")
    try:
        # `index check` sees that the entries differ from what the text gives now...
        assert old.check_index().stale
        # ...and `@scope` finds no page naming it: the pages with the word, as "scope" does.
        assert _names(old, "@scope") == _names(old, "scope")
    finally:
        old.close()
    store = Store.open(blank_pg)  # opening a store upgrades it, as every command does
    try:
        assert store.revision() == SCHEMA_REVISION
        assert not store.check_index().stale
        found = _names(store, "@scope")
        assert found[:2] == ["articles/at-scope", "blog/new-in-chrome-118"], found
    finally:
        store.close()
