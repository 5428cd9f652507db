"""The offline docs browser's pages, through Starlette's TestClient on a real SQLite store."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mirror.config import Settings
from mirror.errors import StoreError
from mirror.models import Document
from mirror.records import read_sample
from mirror.render import links as web_links
from mirror.render.markdown_html import pygments_css
from mirror.serve.web import views as web_views
from mirror.serve.web.pages import STATIC_DIR
from mirror.serve.web.routes import WebOptions, web_routes
from mirror.service import Mirror
from tests.conftest import CANARY_KEY, seed, stored
from tests.emulator_fixtures import corpus_documents
from tests.store_templates import StoreTemplates
from tests.wheel_build import build_wheel

NOW = 1_790_000_000.0
DAY = 86400.0
CHROME = "documents/developer.chrome.com/docs/extensions"
HOSTILE = f"{CHROME}/mv3/hostile"
HOSTILE_CONTENT = """# Hostile page

<script>alert("content")</script>
<img src="https://evil.example/pixel.png" onerror="alert(1)" alt="tracker">
<iframe src="https://evil.example/frame">framed</iframe>
<style>body { background: url(https://evil.example/bg.png) }</style>
<div style="background: url(https://evil.example/x.png)" onclick="alert(2)">styled</div>
<a href="javascript:alert(3)">js link</a> <a href=" JaVaScRiPt:alert(4)">js 2</a>
<p class="not-mirrored">spoofed marker</p></main></body>

[to a11y](/docs/extensions/mv3/a11y/) and [messaging](https://developer.chrome.com/docs/extensions/mv3/messaging/#options)
and [nowhere](/docs/extensions/reference/nothing-here/) and [github](https://github.com/GoogleChrome)
and [a section](#details) and [this page](/docs/extensions/mv3/hostile/#details).

{% Aside 'caution' %}
Careful **now**.
{% endAside %}

<figure>
  {% Img src="https://evil.example/diagram.png",
         alt="A 'quoted' diagram", width="8" %}
</figure>

{% BrowserCompat 'api.Hostile' %} {% if draft %}draft text{% endif %} {# a hidden comment #}
{% Mystery 'x' %}

## Details {: #details }

```js
const x = "<script>";
```

| a | b |
|---|---|
| 1 | 2 |
"""


def _store_docs() -> list[tuple[Document, float]]:
    """The sample, with the tensorflow pages fetched long ago, plus a hostile page."""
    docs = [(doc, NOW - (40 * DAY if "tensorflow" in doc.name else 3600)) for doc in read_sample()]
    hostile = Document(
        name=HOSTILE,
        uri="https://developer.chrome.com/docs/extensions/mv3/hostile",
        title='<script>alert("title")</script> Hostile & friends',
        description="A page <b>that attacks</b>",
        content=HOSTILE_CONTENT,
    ).with_derived_fields()
    return [*docs, (hostile, NOW - 2 * DAY)]


def _settings(db_url: str) -> Settings:
    return Settings(db_url=db_url, upstream="http://127.0.0.1:9", api_key=CANARY_KEY, offline=False)


def _build_web_store(db_url: str) -> None:
    """The sample plus a hostile page, one write per fetch time."""
    by_time: dict[float, list[Document]] = {}
    for doc, fetched_at in _store_docs():
        by_time.setdefault(fetched_at, []).append(doc)
    with Mirror(_settings(db_url), clock=lambda: NOW) as mirror:
        for fetched_at, docs in by_time.items():
            seed(mirror, docs, fetched_at=fetched_at, upstream="sample")


@pytest.fixture
def web_mirror(store_templates: StoreTemplates, tmp_path: Path) -> Iterator[Mirror]:
    """A Mirror on a fresh store (a copy of one built once): the sample plus a hostile page,
    fetched at various times."""
    db_url = store_templates.copy("web", _build_web_store, tmp_path / "store.sqlite3")
    mirror = Mirror(_settings(db_url), clock=lambda: NOW)
    yield mirror
    mirror.close()


def make_client(mirror: Mirror, options: WebOptions | None = None) -> TestClient:
    """A TestClient for an app made only of the browser's routes."""
    return TestClient(Starlette(routes=web_routes(mirror, options or WebOptions())))


@pytest.fixture
def client(web_mirror: Mirror) -> TestClient:
    """A TestClient on the browser routes (default options: offline)."""
    return make_client(web_mirror)


PAGES = [
    "/",
    "/browse/",
    "/browse/developer.chrome.com/",
    "/browse/developer.chrome.com/docs/extensions/mv3/",
    f"/doc/{CHROME[10:]}/mv3/a11y",
    f"/doc/{HOSTILE[10:]}",
    "/search?q=service+worker",
    "/status",
    "/changes",
    f"/history/{CHROME[10:]}/mv3/a11y",
]


@pytest.mark.parametrize("url", PAGES)
def test_every_page_renders_with_nav_search_box_and_csp(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert (
        "default-src 'self'" in csp and "style-src 'self'" in csp and "img-src 'self' data:" in csp
    )
    for link in ('href="/"', 'href="/browse/"', 'href="/search"', 'href="/status"'):
        assert link in response.text
    assert '<form class="search-box" action="/search"' in response.text
    assert CANARY_KEY not in response.text


@pytest.mark.parametrize("url", PAGES)
def test_no_asset_comes_from_another_origin(client: TestClient, url: str) -> None:
    response = client.get(url)
    page = response.text
    # One script, our own file: no inline script (the CSP would block it anyway).
    assert re.findall(r"<script\b[^>]*>.*?</script>", page, re.S | re.I) == [
        '<script src="/static/app.js" defer></script>'
    ]
    assert "script-src 'self';" in response.headers["content-security-policy"]
    assert "unsafe-inline" not in response.headers["content-security-policy"]
    assets = re.findall(r"<(?:link|script|img|iframe|source|video|audio|embed)\b[^>]*>", page)
    for tag in assets:
        for target in re.findall(r'(?:src|href|srcset)="([^"]*)"', tag):
            assert target.startswith(("/", "data:")), f"external asset in {tag}"
    assert not re.search(r"\bstyle=", page), "inline styles break under the CSP"


def test_stylesheets_load_nothing_else() -> None:
    for css in STATIC_DIR.glob("*.css"):
        text = css.read_text()
        assert "@import" not in text and "url(" not in text, css.name


def test_pygments_stylesheet_is_current() -> None:
    text = (STATIC_DIR / "pygments.css").read_text()
    assert text.split("\n", 1)[1] == pygments_css(), "regenerate static/pygments.css"


def test_static_files_are_served(client: TestClient) -> None:
    response = client.get("/static/style.css")
    assert response.status_code == 200 and "text/css" in response.headers["content-type"]


def test_home_shows_sources_counts_and_freshness(client: TestClient) -> None:
    page = client.get("/").text
    assert "51 documents from 2 data sources" in page
    assert "metadata only" not in page  # nothing here was seen only in search results
    assert '<a href="/browse/developer.chrome.com/">developer.chrome.com</a>' in page
    assert '<a href="/browse/www.tensorflow.org/">www.tensorflow.org</a>' in page
    assert "1 hour ago" in page and "40 days ago" in page  # newest and oldest fetch


def test_home_and_status_count_metadata_only_rows_apart(web_mirror: Mirror) -> None:
    from tests.conftest import open_store

    store = open_store(web_mirror)
    try:  # as a search result would note it: a name and metadata, no content
        seen = Document(name="documents/web.dev/articles/seen-in-search", title="Seen")
        store.recordings.note_metadata([seen], at=NOW, upstream="test")
    finally:
        store.close()
    client = make_client(web_mirror)
    home = client.get("/").text
    assert "51 documents (+1 known from search results, metadata only)" in home
    status = client.get("/status").text
    assert re.search(r'"num">1</span><span class="what">known from search results', status)


def test_browse_walks_hosts_folders_and_documents(client: TestClient) -> None:
    root = client.get("/browse/").text
    assert 'href="/browse/developer.chrome.com/"' in root and "Hosts" in root
    ext = client.get("/browse/developer.chrome.com/docs/extensions/").text
    assert 'href="/browse/developer.chrome.com/docs/extensions/mv3/"' in ext
    assert "migrating/" in ext
    hub = client.get("/browse/www.tensorflow.org/hub/common_saved_model_apis/").text
    assert "This folder is also a document" in hub  # the section's own page
    assert 'href="/doc/www.tensorflow.org/hub/common_saved_model_apis/text"' in hub
    assert client.get("/browse/nowhere.example/").status_code == 404
    moved = client.get("/browse", follow_redirects=False)
    assert moved.status_code == 308 and moved.headers["location"] == "/browse/"


def test_document_page_renders_markdown_with_highlighted_code(client: TestClient) -> None:
    page = client.get(f"/doc/{HOSTILE[10:]}").text
    assert '<h2 id="details">Details</h2>' in page  # kramdown id kept, `{: ...}` gone
    assert '<pre class="highlight"><code>' in page and 'class="hl-' in page
    assert "<table>" in page and "<th>a</th>" in page
    assert (
        '<h1 id="hostile-page">Hostile page</h1>' in page
    )  # a first heading unlike the title stays


def test_a_leading_heading_that_repeats_the_title_is_shown_once(client: TestClient) -> None:
    page = client.get(f"/doc/{CHROME[10:]}/migrating/to-service-workers").text
    assert page.count("<h1") == 1 and "Migrate to a service worker</h1>" in page


def test_document_content_and_title_are_inert(client: TestClient) -> None:
    page = client.get(f"/doc/{HOSTILE[10:]}").text
    # Our own script tag, once, in the head; nothing else may carry script.
    lowered = page.lower().replace('<script src="/static/app.js" defer></script>', "", 1)
    for bad in (
        "<script",
        "<iframe",
        "<style",
        "onerror",
        "onclick",
        "javascript:",
        "evil.example",
    ):
        assert bad not in lowered, bad
    assert "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt; Hostile &amp; friends" in page
    assert '<span class="hl-s2">"&lt;script&gt;"</span>' in page  # in highlighted code
    assert 'title="image not available offline">image: tracker</span>' in page
    assert 'class="not-mirrored">spoofed' not in page  # documents cannot borrow our classes
    assert page.rstrip().endswith("</html>") and page.count("</main>") == 1


def test_a_document_uri_becomes_a_link_only_when_it_is_http(web_mirror: Mirror) -> None:
    name = f"{CHROME}/mv3/bad-uri"
    doc = Document(name=name, uri="javascript:alert(document.domain)", content="[rel](other)")
    seed(web_mirror, [doc.with_derived_fields()], fetched_at=NOW, upstream="sample")
    page = make_client(web_mirror).get(f"/doc/{name[10:]}").text
    assert 'href="javascript:' not in page.lower()
    assert "<dd><code>javascript:alert(document.domain)</code></dd>" in page  # shown as text
    # Its relative links resolve against the name's own https address instead.
    assert 'href="https://developer.chrome.com/docs/extensions/mv3/other"' in page
    good = make_client(web_mirror).get(f"/doc/{CHROME[10:]}/mv3/a11y").text
    assert 'class="external" href="https://developer.chrome.com/docs/extensions/mv3/a11y"' in good


def test_template_tags_render_as_plain_boxes(client: TestClient) -> None:
    page = client.get(f"/doc/{HOSTILE[10:]}").text
    assert '<aside class="tpl tpl-aside tpl-caution"><p class="tpl-label">Caution</p>' in page
    # A tag over 2 lines; pictures and live widgets are quiet placeholders, not [bracketed].
    assert "offline\">image: A 'quoted' diagram</span>" in page
    assert 'offline">browser support table: api.Hostile</span>' in page
    assert "not available offline:" not in page and "[image" not in page
    assert "draft text" in page and "hidden comment" not in page
    assert '<span class="tpl tpl-note">[Mystery]</span>' in page
    assert "{%" not in page and "{#" not in page


def test_links_to_mirrored_documents_become_local_pages(client: TestClient) -> None:
    page = client.get(f"/doc/{HOSTILE[10:]}").text
    assert f'<a href="/doc/{CHROME[10:]}/mv3/a11y" class="doc-link">to a11y</a>' in page
    assert f'href="/doc/{CHROME[10:]}/mv3/messaging#options" class="doc-link"' in page
    assert '<a href="#details">a section</a>' in page
    assert '<a href="#details">this page</a>' in page  # a link to itself stays on the page


def test_links_to_unmirrored_documents_and_other_sites_are_marked(client: TestClient) -> None:
    page = client.get(f"/doc/{HOSTILE[10:]}").text
    missing = f"{CHROME}/reference/nothing-here"
    assert (
        '<a href="https://developer.chrome.com/docs/extensions/reference/nothing-here" '
        f'class="not-mirrored" title="not mirrored: dk-mirror fetch {missing}">nowhere</a>'
        '<span class="link-marker not-mirrored-marker">not mirrored</span>'
    ) in page
    assert re.search(r'<a href="https://github.com/GoogleChrome" [^>]*class="external"', page)
    assert '<span class="link-marker external-marker">↗</span>' in page


def test_relative_source_links_resolve_like_the_site(client: TestClient) -> None:
    # tensorflow pages link to sibling sources as `../common_signatures/text.md`.
    page = client.get("/doc/www.tensorflow.org/hub/common_saved_model_apis/text").text
    assert 'href="/doc/www.tensorflow.org/hub/common_signatures/text" class="doc-link"' in page


def test_link_existence_is_one_batched_lookup(
    web_mirror: Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_client(web_mirror)
    calls: list[list[str]] = []
    real = web_mirror.cached_names

    def counting(names: list[str]) -> Any:
        calls.append(list(names))
        return real(names)

    monkeypatch.setattr(web_mirror, "cached_names", counting)
    client.get(f"/doc/{CHROME[10:]}/migrating/to-service-workers")
    # One lookup answers "is it mirrored?" for every link on the page.
    assert len(calls) == 1
    assert len(calls[0]) > 10


def test_document_urls_are_canonical(client: TestClient) -> None:
    moved = client.get(f"/doc/{CHROME[10:]}/mv3/a11y/", follow_redirects=False)
    assert moved.status_code == 308
    assert moved.headers["location"] == f"/doc/{CHROME[10:]}/mv3/a11y"


def test_unknown_document_is_404_naming_neighbours_and_the_fetch_command(
    client: TestClient,
) -> None:
    response = client.get(f"/doc/{CHROME[10:]}/mv3/a11yy")
    assert response.status_code == 404
    assert f"dk-mirror fetch {CHROME}/mv3/a11yy" in response.text
    assert f'href="/doc/{CHROME[10:]}/mv3/a11y"' in response.text  # the nearest cached page
    assert client.get("/doc/not a name").status_code == 404


def test_the_browser_never_fetches_unless_allowed(web_mirror: Mirror, emulator: Any) -> None:
    have = {s.name for s in web_mirror.list_documents()}
    wanted = next(d["name"] for d in corpus_documents("tensorflow.org") if d["name"] not in have)
    # The settings are online (an unreachable upstream): a fetch attempt would be a 502.
    assert make_client(web_mirror).get(web_links.doc_path(wanted)).status_code == 404
    settings = Settings(
        db_url=web_mirror.settings.db_url, upstream=emulator.base_url, api_key="test-key"
    )
    with Mirror(settings) as online:
        page = make_client(online, WebOptions(allow_fetch=True)).get(web_links.doc_path(wanted))
        assert page.status_code == 200 and "served from upstream" in page.text
        assert stored(online, [wanted])  # written through to the store


def test_search_highlights_matches_and_shows_the_source(client: TestClient) -> None:
    page = client.get("/search?q=service+worker").text
    assert "<mark>service</mark>" in page.lower() or "<mark>Service</mark>" in page
    assert 'class="badge source">local</span>' in page
    assert re.search(r'<h2><a href="/doc/developer\.chrome\.com/[^"]+">', page)
    assert "{%" not in page.split("<ol", 1)[1]  # snippets are prose, not template syntax


def test_search_counts_the_pages_shown_and_marks_only_words_that_matter(
    web_mirror: Mirror,
) -> None:
    name = f"{CHROME}/mv3/emphasis"
    content = (
        "# Moving on\n\nYou _always_ zanzibar from the old page to the new one, "
        "![a diagram](https://example.com/d.png) and *never* back &mdash; ever.\n"
    )
    seed(web_mirror, [Document(name=name, content=content).with_derived_fields()], fetched_at=NOW)
    client = make_client(web_mirror)
    text = client.get("/search", params={"q": "move from manifest to worker"}).text
    shown = len(re.findall(r'<li class="result">', text))
    continued = len(re.findall(r'<li class="result continued">', text))
    assert shown >= 2 and continued >= 1  # the count below would have counted these too
    assert f"{shown} pages found on this page of results" in text
    assert "<mark>to</mark>" not in text.lower() and "<mark>from</mark>" not in text.lower()
    assert "<mark>manifest</mark>" in text.lower()
    # Markdown emphasis, images and entities do not reach a snippet as residue.
    one = client.get("/search", params={"q": "zanzibar from"}).text
    snippet = one.split(f"/doc/{name[10:]}")[1].split("</li>")[0]
    assert "You always <mark>zanzibar</mark> from the old page" in snippet
    assert "_always_" not in snippet and "*never*" not in snippet and "&amp;mdash;" not in snippet
    assert "a diagram and never back — ever." in snippet


def test_search_pages_follow_next_page_tokens(web_mirror: Mirror) -> None:
    client = make_client(web_mirror, WebOptions(page_size=2))
    first = client.get("/search?q=manifest").text
    next_url = re.search(r'<a href="(/search\?[^"]+)" rel="next">', first)
    assert next_url, "expected a next-page link"
    second = client.get(next_url.group(1).replace("&amp;", "&")).text
    titles = re.compile(r'<li class="result">\s*<h2><a href="([^"]+)"')
    assert titles.findall(first) != titles.findall(second)
    assert "« First page" in second


def test_search_escapes_the_query_and_reports_bad_input(client: TestClient) -> None:
    page = client.get("/search", params={"q": "<script>alert(1)</script> worker"}).text
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert client.get("/search").status_code == 200
    too_long = client.get("/search", params={"q": "x" * 600})
    assert too_long.status_code == 400 and "500" in too_long.text


def test_status_draws_the_age_chart_as_inline_svg(client: TestClient) -> None:
    page = client.get("/status").text
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "developer.chrome.com" in svg and "www.tensorflow.org" in svg
    assert 'class="age-0"' in svg and 'class="age-3"' in svg  # 1 hour and 40 days old
    assert "< 1 day" in svg.replace("&lt;", "<") and "older" in svg
    assert "Journal mode" in page and "wal" in page
    assert "API key</dt><dd>configured" in page and CANARY_KEY not in page


def test_store_failures_render_an_error_page(
    web_mirror: Mirror, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken() -> None:
        raise StoreError("the store is locked", hint="try again")

    monkeypatch.setattr(web_mirror, "stats", broken)
    response = make_client(web_mirror).get("/")
    assert response.status_code == 500
    assert "the store is locked" in response.text and "Next: try again" in response.text
    assert response.headers["content-security-policy"].startswith("default-src 'self'")


def test_a_foreign_page_token_is_a_400_on_the_search_page(client: TestClient) -> None:
    response = client.get("/search", params={"q": "manifest", "page": "garbage"})
    assert response.status_code == 400 and "page token" in response.text


def test_every_tenth_corpus_document_renders_inert() -> None:
    from mirror.render import markdown_html as web_markdown
    from mirror.render import sanitize as web_sanitize

    for record in corpus_documents()[::10]:
        uri = record["uri"]
        body = web_sanitize.parse(web_markdown.render(record.get("content") or ""))
        html = body.render(lambda href, uri=uri: web_links.classify(href, uri, set(), set()))
        lowered = html.lower()
        assert "<script" not in lowered and 'href="javascript:' not in lowered, record["name"]
        assert not re.search(r"<[a-z0-9]+[^>]*\son[a-z]+=", lowered), record["name"]
        assert not re.search(r"<img[^>]*src=\"(?!data:)", lowered), record["name"]


@pytest.mark.slow
def test_the_offline_get_path_never_imports_the_web_stack(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    Mirror(Settings(db_url=f"sqlite:///{db}")).stats()  # migrated before (Alembic's imports)
    code = (
        "import sys\n"
        "from mirror.cli.main import cli\n"
        "try:\n"
        "    cli(['--db', sys.argv[1], 'get', '--offline', 'developer.chrome.com/x'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "web = ('starlette', 'jinja2', 'markdown_it', 'pygments', 'uvicorn', 'mirror.serve.web')\n"
        "print(sorted(m for m in sys.modules if m.startswith(web)))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(db)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.strip().splitlines()[-1] == "[]", run.stdout + run.stderr


@pytest.mark.parametrize(
    ("options", "status"),
    [
        ({}, 404),
        ({"allow_fetch": True}, 200),
        ({"allow_fetch": True, "mode": "live"}, 200),
        ({"mode": "offline"}, 404),
    ],
)
def test_serve_lets_the_browser_fetch_only_when_serve_fetches(
    web_mirror: Mirror, emulator: Any, options: dict[str, Any], status: int
) -> None:
    from mirror.serve.app import browser_routes
    from mirror.serve.options import ServeOptions

    stored = {s.name for s in web_mirror.list_documents()}
    wanted = next(d["name"] for d in corpus_documents("tensorflow.org") if d["name"] not in stored)
    settings = Settings(
        db_url=web_mirror.settings.db_url, upstream=emulator.base_url, api_key="test-key"
    )
    with Mirror(settings) as online:
        routes = browser_routes(online, ServeOptions(**options))
        page = TestClient(Starlette(routes=routes)).get(web_links.doc_path(wanted))
        assert page.status_code == status


@pytest.mark.parametrize(
    ("href", "kind", "target"),
    [
        ("#x", "anchor", "#x"),
        (
            "/docs/extensions/mv3/a11y/",
            "local",
            "/doc/developer.chrome.com/docs/extensions/mv3/a11y",
        ),
        ("../mv3/a11y#top", "local", "/doc/developer.chrome.com/docs/extensions/mv3/a11y#top"),
        ("https://developer.chrome.com/docs/x/", "missing", "https://developer.chrome.com/docs/x"),
        ("https://web.dev/articles/x", "missing", "https://web.dev/articles/x"),
        ("https://example.com/a", "external", "https://example.com/a"),
        ("mailto:a@example.com", "external", "mailto:a@example.com"),
        ("javascript:alert(1)", "unsafe", None),
        ("data:text/html,<b>", "unsafe", None),
    ],
)
def test_classify_links(href: str, kind: str, target: str | None) -> None:
    base = "https://developer.chrome.com/docs/extensions/migrating/api-calls"
    existing = {f"{CHROME}/mv3/a11y"}
    link = web_links.classify(href, base, existing, {"developer.chrome.com"})
    assert (link.kind, link.href) == (kind, target)


def test_age_buckets_and_chart_geometry() -> None:
    summaries = [
        web_views.Summary(f"documents/a.dev/{i}", None, None, None, 1, True, NOW - age)
        for i, age in enumerate([10, 2 * DAY, 2 * DAY, 200 * DAY])
    ]
    rows = web_views.age_buckets(summaries, NOW)
    assert rows == [web_views.SourceAges("a.dev", (1, 2, 0, 0, 1))]
    chart = web_views.age_chart(rows)
    widths = [s.width for s in chart.bars[0].segments]
    assert sum(widths) == pytest.approx(chart.bar_width) and widths[1] == pytest.approx(
        2 * widths[0]
    )


@pytest.mark.slow
def test_wheel_ships_templates_and_static(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[1]
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        members = set(archive.namelist())
    shipped = {
        f"mirror/serve/web/templates/{p.name}"
        for p in (root / "mirror/serve/web/templates").iterdir()
    }
    shipped |= {f"mirror/serve/web/static/{p.name}" for p in STATIC_DIR.iterdir()}
    assert shipped <= members and "mirror/serve/web/routes.py" in members
