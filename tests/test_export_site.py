"""`dk-mirror export site`: every internal link of the exported site resolves to a file, pages
not exported are marked, each page credits its original; a re-export rewrites only what a
changed page touches; and a real Chromium searches the site opened from disk (file://)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from mirror.config import Settings
from mirror.exports.site import page_path
from mirror.exports.site_search import shard_key, words
from mirror.service import Mirror
from mirror.store.store import Store

from .store_templates import StoreTemplates, import_sample

CHROMIUM = Path("/usr/bin/chromium")
ONE_PROCESS = {"workers": 1}
_REF = re.compile(r'<(?:a|link|script)\b[^>]*?\b(?:href|src)="([^"]*)"')


@pytest.fixture(scope="module")
def site(
    store_templates: StoreTemplates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, list[str]]]:
    """The sample exported as a site once for the module (read-only for the tests): its
    folder and the exported names."""
    folder = tmp_path_factory.mktemp("site")
    url = store_templates.copy("sample", import_sample, folder / "store.sqlite3")
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        # One process: the fast tests fork none (the workers are tested below, marked slow).
        assert mirror.export("site", folder / "site", options=ONE_PROCESS).pages == 50
        yield folder / "site", sorted(d.name for d in mirror.list_documents(None, 100))


def internal_links(root: Path) -> Iterator[tuple[Path, str, Path]]:
    """(page, href, file it names) for every relative link and asset of every HTML page."""
    for page in root.rglob("*.html"):
        for ref in _REF.findall(page.read_text(encoding="utf-8")):
            parts = urlsplit(ref)
            if parts.scheme or ref.startswith("#") or not parts.path:
                continue
            yield page, ref, (page.parent / unquote(parts.path)).resolve()


def test_every_internal_link_resolves_and_missing_pages_are_marked(
    site: tuple[Path, list[str]],
) -> None:
    out, names = site
    links = list(internal_links(out))
    broken = [(p.relative_to(out), ref) for p, ref, target in links if not target.is_file()]
    assert not broken
    # Links between pages (not only assets and the index) are there and relative.
    between = [ref for p, ref, t in links if t.suffix == ".html" and p.name != "index.html"]
    assert len(between) > 50 and all(not ref.startswith("/") for ref in between)
    for name in names:
        html = (out / page_path(name)).read_text(encoding="utf-8")
        assert "script-src 'none'" in html and "CC BY 4.0" in html and "NOTICE.md" in html
    page = (
        out / page_path("documents/developer.chrome.com/docs/extensions/mv3/manifest")
    ).read_text()
    missing = re.findall(r'<a href="(https://[^"]+)" class="not-mirrored"', page)
    assert missing and all(urlsplit(m).hostname == "developer.chrome.com" for m in missing)
    assert (
        'class="external" href="https://developer.chrome.com/docs/extensions/mv3/manifest"' in page
    )
    index = (out / "index.html").read_text()
    assert all(page_path(n).as_posix() in unquote(index) for n in names)


def test_a_re_export_rewrites_only_what_a_changed_page_touches(
    sample: Mirror, sample_url: str, tmp_path: Path
) -> None:
    # Only the TensorFlow pages: the machinery is the same, and a small site is quick.
    out, twin, prefix = tmp_path / "site", tmp_path / "twin", "www.tensorflow.org/"
    first = sample.export("site", out, prefix=prefix, options=ONE_PROCESS)
    sample.export("site", twin, prefix=prefix, options=ONE_PROCESS)
    files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert files == {p.relative_to(twin): p.read_bytes() for p in twin.rglob("*") if p.is_file()}
    assert sample.export("site", out, prefix=prefix, options=ONE_PROCESS).written == 0
    name = "documents/www.tensorflow.org/hub/caching"
    store = Store.open(sample_url)
    try:
        doc = store.get_many([name])[name].document
        changed = (doc.content or "") + "\nA cachingzz appears.\n"
        store.put([replace(doc, content=changed)], fetched_at=2e9, upstream="test")
    finally:
        store.close()
    again = sample.export("site", out, prefix=prefix, options=ONE_PROCESS)
    rewritten = {p.relative_to(out) for p in out.rglob("*") if p.is_file()} - {
        rel for rel, data in files.items() if (out / rel).read_bytes() == data
    }
    shards = {Path("_dk/search", f"{shard_key(w)}.js") for w in words("cachingzz appears")}
    # The page and its new words' index shards (both shards exist already, so the list of
    # shards in docs.js and the manifest stay as they were).
    assert rewritten == {page_path(name), *shards} and again.written == len(rewritten)
    assert again.unchanged == first.files - again.written


def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/check does)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_chromium_searches_the_site_opened_from_disk(site: tuple[Path, list[str]]) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api")
    _need_chromium()
    out = site[0]
    requests: list[str] = []
    errors: list[str] = []
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page: Any = browser.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            # From a document page, as a reader would: the header's search box.
            page.goto((out / page_path("documents/www.tensorflow.org/hub/installation")).as_uri())
            page.fill("#search-input", "caching")
            page.press("#search-input", "Enter")
            page.wait_for_selector("#search-results li")
            assert page.url.endswith("/search.html?q=caching")
            titles = page.locator("#search-results a").all_inner_texts()
            assert titles[0] == "Caching model downloads from TF Hub"
            assert page.inner_text("#search-count") == f"{len(titles)} pages"
            # Typing: a word being typed matches its completions (service -> services ...).
            page.fill("#search-input", "service work")
            page.wait_for_function(
                "document.getElementById('search-count').textContent.includes('pages')"
                " && document.querySelector('#search-results a').textContent !== "
                "'Caching model downloads from TF Hub'"
            )
            shown = page.locator("#search-results a").all_inner_texts()
            assert "Migrate to a service worker" in shown
            page.locator("#search-results a", has_text="Migrate to a service worker").click()
            page.wait_for_load_state()
            assert page.url.endswith(
                "/developer.chrome.com/docs/extensions/migrating/to-service-workers.html"
            )
            assert page.locator("h1.doc-title").inner_text() == "Migrate to a service worker"
            page.fill("#search-input", "qqxqqnothing")
            page.press("#search-input", "Enter")
            page.wait_for_function(
                "document.getElementById('search-count').textContent === '0 pages'"
            )
        finally:
            browser.close()
    assert not errors
    assert requests and all(r.startswith("file://") or r.startswith("data:") for r in requests)


def test_a_page_file_never_shares_a_path_with_a_folder_of_pages() -> None:
    names = ["documents/h.example/a", "documents/h.example/a.html/b", "documents/h.example/a/b"]
    paths = [page_path(n).as_posix() for n in names]
    assert paths == ["h.example/a.html", "h.example/a%2Ehtml/b.html", "h.example/a/b.html"]
    assert page_path("documents/h.example").as_posix() == "h.example/index.html"
    assert page_path("documents/h.example/..").parts[-1] == "%2E%2E.html"


@pytest.mark.slow
def test_pages_rendered_on_worker_processes_are_the_same_bytes(
    site: tuple[Path, list[str]], sample: Mirror, tmp_path: Path
) -> None:
    report = sample.export("site", tmp_path / "site", options={"workers": 2})
    assert report.pages == 50
    assert _tree(tmp_path / "site") == _tree(site[0])


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
