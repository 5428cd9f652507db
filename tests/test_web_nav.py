"""The browser's navigation (issue 30): the page tree, table of contents, previous/next and
type-ahead, on a real store (the sample plus a few Chrome API reference pages, so the symbol
index has API names). The same features in a real Chromium: tests/test_browser_nav.py."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mirror.config import Settings
from mirror.models import Document
from mirror.records import read_documents, read_sample
from mirror.render import markdown_html
from mirror.search import typeahead
from mirror.search.headings import headings
from mirror.search.typeahead import Entry, TypeaheadIndex
from mirror.serve.web.routes import WebOptions, web_routes
from mirror.service import Mirror
from tests.conftest import seed
from tests.store_templates import StoreTemplates

CORPUS = Path(__file__).parent / "data" / "corpus" / "developer.chrome.com-en.jsonl.gz"
REF = "documents/developer.chrome.com/docs/extensions/reference/"
REFERENCE_PAGES = ("scripting", "tts", "cookies")
MV3 = "documents/developer.chrome.com/docs/extensions/mv3/"
MESSAGING = MV3 + "messaging"


def nav_documents() -> list[Document]:
    """The sample and three reference pages of the Chrome extension API."""
    wanted = {REF + page for page in REFERENCE_PAGES}
    return [*read_sample(), *(d for d in read_documents(CORPUS) if d.name in wanted)]


def build_nav_store(db_url: str) -> None:
    """The store the navigation tests (and the browser's) read."""
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        seed(mirror, nav_documents(), fetched_at=time.time() - 3600, upstream="sample")


@pytest.fixture
def nav_mirror(store_templates: StoreTemplates, tmp_path: Path) -> Iterator[Mirror]:
    """A Mirror on a copy of the navigation store."""
    db_url = store_templates.copy("web-nav", build_nav_store, tmp_path / "nav.sqlite3")
    with Mirror(Settings(db_url=db_url, offline=True)) as mirror:
        yield mirror


@pytest.fixture
def client(nav_mirror: Mirror) -> TestClient:
    """The browser's routes over the navigation store."""
    return TestClient(Starlette(routes=web_routes(nav_mirror, WebOptions())))


def test_heading_anchors_match_the_ids_the_page_gives_them() -> None:
    # Type-ahead links to #anchor without rendering the page: the anchors must be the ids.
    checked = 0
    for doc in nav_documents():
        markdown = markdown_html.without_title(doc.content or "", doc.title)
        html, _toc = markdown_html.render_with_toc(markdown)
        ids = re.findall(r'<h[1-6] id="([^"]*)">', html)
        assert [h.anchor for h in headings(markdown)] == ids, doc.name
        checked += len(ids)
    assert checked > 300


def test_heading_text_drops_markup_but_keeps_code() -> None:
    found = headings(
        "# Title\n\n```sh\n# not a heading\n```\n\n"
        "## Use the `<input>` [tag](https://x.example) *now* {: #use-it }\n"
        "### Same\n### Same\n"
    )
    assert [(h.level, h.text, h.anchor) for h in found] == [
        (1, "Title", "title"),
        (2, "Use the <input> tag now", "use-it"),
        (3, "Same", "same"),
        (3, "Same", "same-2"),
    ]


def test_typeahead_ranks_exact_symbols_then_titles_then_headings_then_words() -> None:
    index = TypeaheadIndex(
        [
            Entry("heading", "Storage quotas", "documents/h/a", "quotas"),
            Entry("page", "Storage", "documents/h/storage"),
            Entry("page", "Local storage explained", "documents/h/local"),
            Entry("symbol", "chrome.storage", "documents/h/api", None, "Namespace"),
            Entry("symbol", "chrome.storage.local.get", "documents/h/storage", "get"),
            Entry("heading", "Storage", "documents/h/storage", None),  # the same place again
        ]
    )
    assert [e.label for e in index.lookup("storage")] == [
        "Storage",  # exact title
        "Storage quotas",  # a label that starts with it
        "chrome.storage",  # a later word: symbols first, shorter first
        "chrome.storage.local.get",
        "Local storage explained",
    ]
    assert [e.label for e in index.lookup("Chrome.Storage")][:1] == ["chrome.storage"]
    assert [e.label for e in index.lookup("storage.local")] == ["chrome.storage.local.get"]
    assert [e.label for e in index.lookup("stor", limit=2)] == ["Storage", "Storage quotas"]
    assert index.lookup("  ") == [] and index.lookup("nothing-like-it") == []


@pytest.mark.parametrize("step", [1e-9, 1e9], ids=["walked", "checked"])
def test_typeahead_matches_each_typed_word_as_the_start_of_successive_words(
    step: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The two ways a lookup of several words goes (walking the completions of the first
    # word, or checking the labels the rarest later word begins a word of) agree.
    monkeypatch.setattr(typeahead, "_STEP", step)
    # "servic wor" is "service worker" half typed: each word a prefix, in order.
    index = TypeaheadIndex(
        [
            Entry("page", "Service workers and the Cache Storage API", "documents/h/cache"),
            Entry("page", "Service worker lifecycle", "documents/h/lifecycle"),
            Entry("heading", "The extension service worker", "documents/h/ext", "sw"),
            Entry("page", "Web services", "documents/h/web"),  # no word after "services"
            Entry("page", "Serving workers", "documents/h/serving"),  # "serving" is not "servic"
            Entry("page", "Service lifecycle of workers", "documents/h/order"),  # not successive
            Entry("page", "Worklets", "documents/h/worklets"),
            Entry("page", "Services", "documents/h/services"),  # ends before a second word
            Entry("page", "Word counts", "documents/h/words"),  # "wor" after a label ends
        ]
    )
    assert [e.label for e in index.lookup("servic wor")] == [
        "Service worker lifecycle",  # labels that start so, in their order
        "Service workers and the Cache Storage API",
        "The extension service worker",  # then a later run of words
    ]
    assert [e.label for e in index.lookup("  SERVIC   wor  ")] == [
        e.label for e in index.lookup("servic wor")
    ]
    assert [e.label for e in index.lookup("ser wor life")] == ["Service worker lifecycle"]
    assert [e.label for e in index.lookup("ext ser w")] == ["The extension service worker"]
    assert [e.label for e in index.lookup("servic wor", limit=1)] == ["Service worker lifecycle"]
    assert index.lookup("servic lifecycle work") == []
    assert index.lookup("services word") == []  # never across two labels


def test_typeahead_finishes_a_long_walk_by_checking_labels_in_the_same_order() -> None:
    # "s w": every label's first word is another completion of "s", so the walk runs out of
    # budget part-way; the checks then give the rest, in order, none twice.
    labels = [f"s{chr(97 + i)}{chr(97 + j)} w{i}{j}" for i in range(20) for j in range(5)]
    labels += [f"x s{i} w" for i in range(10)]  # later words
    index = TypeaheadIndex(
        Entry("page", label, f"documents/h/{n}") for n, label in enumerate(labels)
    )
    found = [e.label for e in index.lookup("s w", limit=200)]
    assert found == sorted(labels[:100]) + sorted(labels[100:])


def test_typeahead_endpoint_offers_labels_for_half_typed_words(client: TestClient) -> None:
    results = client.get("/typeahead", params={"q": "servic wor"}).json()["results"]
    labels = [r for r in results if r["kind"] != "text"]
    # Titles and headings come first, before any page that only has the words somewhere.
    assert [r["label"] for r in labels[:2]] == [
        "Migrate to a service worker",
        "Migrate to a service worker",
    ]
    assert [r["kind"] for r in labels[:2]] == ["page", "heading"]
    assert results[: len(labels)] == labels and len(labels) >= 5
    for r in labels:
        assert re.search(r"\bservic\w*\W+wor", r["label"], re.IGNORECASE), r["label"]


def test_document_page_shows_the_tree_open_to_it_its_contents_and_neighbours(
    client: TestClient,
) -> None:
    page = client.get("/doc/" + MESSAGING[10:]).text
    tree = page[page.index('<nav class="sidetree"') : page.index("</nav>", page.index("sidetree"))]
    # The current page, marked, inside open folders all the way down from its host.
    assert f'<a href="/doc/{MESSAGING[10:]}" aria-current="page">Message passing</a>' in tree
    for prefix in ("developer.chrome.com/", "developer.chrome.com/docs/extensions/mv3/"):
        assert f'<details open data-prefix="documents/{prefix}" data-loaded>' in tree
    # Other folders and hosts are listed closed, with a link that works without script.
    assert '<details data-prefix="documents/www.tensorflow.org/">' in tree
    assert 'href="/browse/www.tensorflow.org/">Open folder</a>' in tree
    # The table of contents links to ids the page carries.
    toc = re.findall(r'<li class="toc-(\d)"><a href="#([^"]+)">', page)
    assert ("2", "simple") in toc and ("3", "port-lifetime") in toc
    for _level, anchor in toc:
        assert f' id="{anchor}"' in page
    # Previous and next: its neighbours by name in the same folder.
    assert f'rel="prev" href="/doc/{MV3[10:]}match_patterns"' in page
    assert f'rel="next" href="/doc/{MV3[10:]}nativeMessaging"' in page


def test_tree_json_lists_one_folder(client: TestClient) -> None:
    body = client.get("/tree.json", params={"prefix": "documents/www.tensorflow.org/"}).json()
    assert body["prefix"] == "documents/www.tensorflow.org/"
    assert body["folders"] == [
        {
            "label": "hub",
            "prefix": "documents/www.tensorflow.org/hub/",
            "url": "/browse/www.tensorflow.org/hub/",
            "count": 15,
        }
    ]
    hub = client.get("/tree.json", params={"prefix": "documents/www.tensorflow.org/hub"}).json()
    # A folder that is also a page links to that page, which is not listed again beside it.
    own = [f for f in hub["folders"] if f["url"].startswith("/doc/")]
    assert own and len(hub["pages"]) + len(own) + sum(f["count"] for f in hub["folders"]) == 15
    assert all(p["url"].startswith("/doc/www.tensorflow.org/hub/") for p in hub["pages"])
    assert client.get("/tree.json", params={"prefix": "documents/no.such.host/"}).status_code == 404
    assert client.get("/tree.json", params={"prefix": "bad name"}).status_code == 404


def test_typeahead_endpoint_puts_an_exact_symbol_first_and_counts_what_it_returns(
    client: TestClient,
) -> None:
    response = client.get("/typeahead", params={"q": "chrome.scripting.executeScript"})
    # Its own time, for developer tools and bench_typeahead.
    assert re.fullmatch(r"typeahead;dur=\d+\.\d\d", response.headers["server-timing"])
    body = response.json()
    first = body["results"][0]
    assert (first["kind"], first["label"]) == ("symbol", "chrome.scripting.executeScript")
    assert first["url"].startswith("/doc/developer.chrome.com/docs/extensions/reference/scripting")
    assert body["count"] == len(body["results"])

    body = client.get("/typeahead", params={"q": "messag", "limit": 5}).json()
    assert body["count"] == len(body["results"]) == 5
    assert body["results"][0] == {
        "kind": "page",
        "label": "Message passing",
        "context": "developer.chrome.com/docs/extensions/mv3",
        "url": "/doc/" + MESSAGING[10:],
    }
    # A heading result opens the page at that heading: the id is on the page.
    heading = next(r for r in body["results"] if r["kind"] == "heading")
    path, anchor = heading["url"].split("#")
    assert f' id="{anchor}"' in client.get(path).text


def test_typeahead_falls_back_to_full_text_and_never_repeats_a_page(client: TestClient) -> None:
    # No title or heading starts with these words; the full text has them.
    body = client.get("/typeahead", params={"q": "sendMessage reply"}).json()
    assert body["results"] and {r["kind"] for r in body["results"]} == {"text"}
    urls = [r["url"] for r in body["results"]]
    assert len(urls) == len(set(urls))
    assert client.get("/typeahead", params={"q": ""}).json() == {
        "query": "",
        "count": 0,
        "results": [],
    }
    assert client.get("/typeahead", params={"q": "x", "limit": "many"}).status_code == 200


def test_a_big_stores_first_outline_is_built_in_the_background(nav_mirror: Mirror) -> None:
    assert nav_mirror.outline(wait=False) is None  # nothing yet: a build starts
    deadline = time.monotonic() + 30
    while (outline := nav_mirror.outline(wait=False)) is None:
        assert time.monotonic() < deadline, "the background build never finished"
        time.sleep(0.02)
    assert MESSAGING in outline.titles
    # After a write, the next call still answers at once (the old outline) and a rebuild
    # brings the new page in.
    new = Document(name=MV3 + "zz-new", title="Brand new page", content="# Brand new page\n")
    seed(nav_mirror, [new.with_derived_fields()], fetched_at=time.time())
    assert nav_mirror.outline(wait=False) is outline
    while MV3 + "zz-new" not in (nav_mirror.outline(wait=False) or outline).titles:
        assert time.monotonic() < deadline, "the rebuild after a write never finished"
        time.sleep(0.02)
    assert [s.name for s in nav_mirror.typeahead("brand new")][:1] == [MV3 + "zz-new"]


def test_a_failed_rebuild_keeps_the_old_outline_and_says_why(
    nav_mirror: Mirror, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mirror.service import outline as outline_module

    outline = nav_mirror.outline()
    assert outline is not None

    def broken(ctx: object) -> None:
        raise OSError("disk I/O error")

    monkeypatch.setattr(outline_module, "_build_from", broken)
    new = Document(name=MV3 + "zz-new", title="Brand new page", content="# Brand new page\n")
    seed(nav_mirror, [new.with_derived_fields()], fetched_at=time.time())
    with caplog.at_level("WARNING", logger="mirror.service.outline"):
        assert nav_mirror.outline(wait=False) is outline  # stale: a rebuild starts
        deadline = time.monotonic() + 30
        while "not rebuilt" not in caplog.text:
            assert time.monotonic() < deadline, "the failed rebuild was never reported"
            time.sleep(0.02)
    assert "disk I/O error" in caplog.text
    assert nav_mirror.outline(wait=False) is outline
