"""Snippets of local results on both backends: cut around the query's words wherever they are
in a chunk, in the user's own text (PostgreSQL's ts_headline reads a cut form of it), as
prose; the same result shape on SQLite and PostgreSQL."""

# CJK test text and its full-width punctuation are deliberate.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from mirror.models import Document
from mirror.store.store import Store
from tests.conftest import seed

pytestmark = pytest.mark.both_backends

SOURCE = "developer.chrome.com"
# About 1,400 bytes of prose before the sentence that matters: the chunk starts far from it.
FILLER = (
    "Extensions are built from several components that live in separate contexts, and each "
    "of them has its own lifetime, permissions and view of the browser window. "
) * 9
MESSAGING = (
    "# Messaging\n\n## Overview\n\n" + "An overview of the parts of an extension. " * 40 + "\n\n"
    "## Receiving\n\n" + FILLER + "Register a listener with "
    "`chrome.runtime.onMessage.addListener()` to receive each request from a content script.\n\n"
    "```js {: .devsite-terminal }\nchrome.runtime.onMessage.addListener((request) => {});\n```\n"
    "\n## Sending\n\n" + "Sending works the other way around, from the page. " * 40
)


def _doc(path: str, title: str, content: str) -> Document:
    return Document(
        name=f"documents/{SOURCE}/docs/{path}",
        uri=f"https://{SOURCE}/docs/{path}",
        content=content,
        description=f"About {title.lower()}.",
        data_source=SOURCE,
        title=title,
    )


DOCS = [
    _doc("messaging", "Message passing", MESSAGING),
    _doc("alarms", "Alarms", "# Alarms\n\nSchedule code with `chrome.alarms.create()`."),
    _doc(
        "runtime",
        "The runtime API",
        "# The runtime API\n\nThe runtime API fires onMessage for every message it gets.",
    ),
]


def _marked(snippet: list[tuple[str, bool]]) -> list[str]:
    return [text for text, marked in snippet if marked]


def _joined(snippet: list[tuple[str, bool]]) -> str:
    return "".join(text for text, _ in snippet)


@pytest.fixture
def offline(make_mirror):  # type: ignore[no-untyped-def]
    mirror = make_mirror(offline=True)
    seed(mirror, DOCS, fetched_at=0.0)
    return mirror


def test_identifier_deep_in_a_long_chunk_is_shown_and_marked_in_its_real_form(offline):
    result = offline.search_documents("chrome.runtime.onMessage", page_size=5)
    assert result.source == "local"
    hit = result.page.results[0]
    assert hit.parent == DOCS[0].name
    # The chunk starts with the filler: the sentence is ~1,400 bytes into it.
    assert hit.content.index("onMessage") > 1000
    [snippet] = offline.snippets("chrome.runtime.onMessage", [hit.content])
    text = _joined(snippet)
    assert text.startswith("…") and len(text) < 400
    assert "chrome.runtime.onMessage.addListener()" in text
    marked = _marked(snippet)
    assert "onMessage" in marked and "onmessage" not in marked
    assert {"chrome", "runtime"} <= set(marked)


def test_snippets_are_prose_without_fence_info_strings_or_control_characters(offline):
    content = (
        "## Install\x07 it\n\nRun this in a terminal:\n\n```sh {: .devsite-terminal }\n"
        "pip install tensorflow\n```\n\nThen install the walrus plugin.\x1b[31m"
    )
    [snippet] = offline.snippets("install walrus", [content])
    text = _joined(snippet)
    assert "```" not in text and "devsite" not in text and "{:" not in text
    assert text.startswith("Install it — Run this")
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in text)
    assert {"Install", "install", "walrus"} <= set(_marked(snippet))


def test_stemmed_and_accented_words_are_marked_in_the_users_spelling(offline):
    content = "The émigré café opened. Sea otters float."
    [snippet] = offline.snippets("café otter", [content])
    assert set(_marked(snippet)) == {"café", "otters"}
    assert _joined(snippet) == content


def test_a_short_chunk_is_shown_whole_with_its_punctuation(offline):
    content = "- Introduction to source maps\n- Debug your original code (with maps)."
    [snippet] = offline.snippets("source maps", [content])
    assert (
        _joined(snippet) == "• Introduction to source maps • Debug your original code (with maps)."
    )
    assert _marked(snippet) == ["source", "maps", "maps"]


def test_postgresql_marks_folded_accents_and_cjk_words_in_the_text_as_written(pg_url):
    # What the index cut (accents dropped, CJK as bigrams) marks the text as the user wrote it.
    store = Store.open(pg_url)
    try:
        contents = ["The émigré café opened its CAFÉS, ﬁne ones.", "服务 工作线程 缓存请求，网络。"]
        cafe, _ = store.headlines("cafe fine", contents) or []
        _, chinese = store.headlines("缓存", contents) or []
    finally:
        store.close()
    assert _marked(cafe) == ["café", "CAFÉS", "ﬁne"]
    assert _joined(cafe) == contents[0]
    assert _marked(chinese) == ["缓", "存"]
    assert _joined(chinese) == contents[1]


def test_a_chunk_without_the_words_shows_its_start(offline):
    long = "Alarms wake the worker up on time. " * 30
    [snippet] = offline.snippets("walrus", [long])
    assert not _marked(snippet)
    text = _joined(snippet)
    assert long.startswith(text.removesuffix("…")) and text.endswith("…")
    assert 150 <= len(text) <= 400


def test_the_browser_marks_the_snippet(offline):
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from mirror.serve.web.routes import WebOptions, web_routes

    client = TestClient(Starlette(routes=web_routes(offline, WebOptions())))
    page = client.get("/search", params={"q": "chrome.runtime.onMessage"}).text
    assert "<mark>onMessage</mark>" in page
    assert "devsite" not in page.split("<ol", 1)[1]


@pytest.mark.sqlite_only
def test_results_have_the_same_shape_on_both_backends(pg_url, tmp_path):  # type: ignore[no-untyped-def]
    from mirror.config import Settings
    from mirror.service import Mirror

    pages = {}
    for url in (f"sqlite:///{tmp_path / 'store.sqlite3'}", pg_url):
        store = Store.open(url)
        store.put(DOCS, fetched_at=0.0, upstream="test")
        store.close()
        with Mirror(Settings(db_url=url, offline=True)) as mirror:
            result = mirror.search_documents("chrome.runtime.onMessage", page_size=10)
            chunks = result.page.results
            snippets = mirror.snippets("chrome.runtime.onMessage", [c.content for c in chunks])
        pages[url.split(":")[0]] = (result, snippets)
    (lite, lite_snippets), (pg, pg_snippets) = pages["sqlite"], pages["postgresql"]
    assert lite.source == pg.source == "local"
    shape = [
        [(r.parent, r.id, sorted(r.to_api()), sorted(r.to_api()["document"])) for r in p.results]
        for p in (lite.page, pg.page)
    ]
    assert shape[0] == shape[1]
    assert [r.content for r in lite.page.results] == [r.content for r in pg.page.results]
    for a, b in zip(lite_snippets, pg_snippets, strict=True):
        assert all(isinstance(t, str) and isinstance(m, bool) for t, m in a + b)
        assert {m.casefold() for m in _marked(a)} == {m.casefold() for m in _marked(b)}
