"""A real headless Chromium walks the docs browser served by the real `dk-mirror serve`.

Debian's chromium (installed by .ci/check) is driven through Playwright's driver; no browser
build is ever downloaded. JavaScript is off for the whole walk: every page must work without it.
Screenshots of each step land in tests/artifacts/browser/ for people to look at.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mirror.config import Settings
from mirror.records import read_sample
from mirror.service import Mirror
from tests.conftest import seed_each

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "browser"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DAY = 86400.0
START_TIMEOUT = 30.0

playwright_api = pytest.importorskip("playwright.sync_api")


def _need_chromium() -> None:
    if CHROMIUM.exists():
        return
    message = f"{CHROMIUM} is missing: apt-get install chromium (.ci/check does)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs it; a missing browser there is a broken setup
    pytest.skip(message)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store with the sample, fetched over the last few months (for the status chart)."""
    path = tmp_path / "browser.sqlite3"
    now = time.time()
    with Mirror(Settings(db_url=f"sqlite:///{path}")) as mirror:
        dated = [(doc, now - _sample_age(i) * DAY) for i, doc in enumerate(read_sample())]
        seed_each(mirror, dated, upstream="sample")
    return path


def _sample_age(index: int) -> float:
    """Days since the sample document at `index` was fetched in the browser's store."""
    return (0.1, 3, 12, 45, 200)[index % 5]


@pytest.fixture
def server(store_path: Path) -> Iterator[str]:
    """`dk-mirror serve` on 127.0.0.1, any free port; yields its base URL."""
    yield from _serve(store_path)


def _serve(store_path: Path) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--db", str(store_path), "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    found = threading.Event()
    base: list[str] = []

    def drain() -> None:
        # Keep reading stderr for the server's whole life, so a full pipe never blocks it.
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            match = re.search(r"dk-mirror serve: (http://127\.0\.0\.1:\d+)", line)
            if match and not base:
                base.append(match.group(1))
                found.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        if not found.wait(START_TIMEOUT):
            pytest.fail("dk-mirror serve did not start:\n" + "".join(lines))
        _wait_ready(base[0])
        yield base[0]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        reader.join(10)
        proc.stderr.close()


def _wait_ready(base: str) -> None:
    import httpx

    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            if httpx.get(base + "/status", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            pytest.fail("dk-mirror serve never answered /status")
        time.sleep(0.1)


@pytest.fixture
def browser_page(tmp_path: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    """A Chromium page with JavaScript off; yields it, every request URL, and console errors."""
    _need_chromium()
    requests: list[str] = []
    console_errors: list[str] = []
    with playwright_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh profile: no cache, no cookies, no history
            executable_path=str(CHROMIUM),
            args=CHROMIUM_ARGS,
            headless=True,
            java_script_enabled=False,
            viewport={"width": 1280, "height": 900},
        )
        context.on("request", lambda request: requests.append(request.url))

        def only_loopback(route: Any) -> None:
            # Recorded above and refused here: a page must never reach beyond this machine.
            host = urlsplit(route.request.url).hostname
            route.continue_() if host == "127.0.0.1" else route.abort()

        context.route("**/*", only_loopback)
        page = context.pages[0] if context.pages else context.new_page()
        page.on(
            "console",
            lambda msg: console_errors.append(msg.text) if msg.type == "error" else None,
        )
        try:
            yield page, requests, console_errors
        finally:
            context.close()


def _shot(page: Any, name: str, *, full_page: bool = True) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def test_walk_home_document_link_search_result(
    server: str, browser_page: tuple[Any, list[str], list[str]]
) -> None:
    page, requests, console_errors = browser_page
    expect = playwright_api.expect

    page.goto(server + "/")
    expect(page.locator("h1")).to_have_text("Offline documentation mirror")
    expect(page.locator("main")).to_contain_text("50 documents from 2 data sources")
    _shot(page, "01-home")

    # Home -> the tree -> a document, by clicking, as a person would.
    page.get_by_role("link", name="developer.chrome.com").click()
    for folder in ("docs/", "extensions/", "migrating/"):
        page.get_by_role("link", name=folder, exact=True).click()
    _shot(page, "02-browse")
    page.get_by_role("link", name="Migrate to a service worker").click()
    assert (
        page.url
        == server + "/doc/developer.chrome.com/docs/extensions/migrating/to-service-workers"
    )
    expect(page.locator("h1")).to_have_text("Migrate to a service worker")
    expect(page.locator(".markdown pre.highlight").first).to_be_visible()
    assert page.locator(".markdown pre.highlight span[class^='hl-']").count() > 10
    expect(page.locator(".not-mirrored-marker").first).to_have_text("not mirrored")
    expect(page.locator(".tpl-compare.tpl-better").first).to_contain_text("Manifest V3")
    _shot(page, "03-document", full_page=False)  # long pages: the top, then the code
    page.locator(".tpl-compare").first.scroll_into_view_if_needed()
    _shot(page, "03b-document-code", full_page=False)

    # A link inside the document to another mirrored document opens the local copy.
    link = page.locator("a.doc-link", has_text="message passing").first
    assert link.get_attribute("href") == "/doc/developer.chrome.com/docs/extensions/mv3/messaging"
    link.click()
    expect(page.locator("h1")).to_have_text("Message passing")
    expect(page.locator(".markdown")).to_contain_text("chrome.runtime.sendMessage")
    _shot(page, "04-linked-document", full_page=False)

    # Search from the header box (a plain GET form: no JavaScript needed).
    box = page.locator("header input[name=q]")
    box.fill("service worker messages")
    box.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=service\+worker\+messages"))
    results = page.locator("li.result")
    assert results.count() >= 3
    expect(results.first.locator("mark").first).to_be_visible()
    expect(page.locator(".result-info")).to_contain_text("local index")
    _shot(page, "05-search")

    # A result opens its document.
    first = results.first.locator("h2 a")
    title = first.inner_text()
    first.click()
    expect(page.locator("h1")).to_have_text(title)
    _shot(page, "06-result", full_page=False)

    page.goto(server + "/status")
    chart = page.locator("svg.age-chart")
    expect(chart).to_be_visible()
    assert chart.locator("rect.age-4").count() >= 2  # the 200-day-old copies, per source
    expect(chart).to_contain_text("www.tensorflow.org")
    _shot(page, "07-status")

    # Checked before the 404 step: Chromium logs the 404 itself as a console error.
    assert not console_errors, console_errors  # e.g. a CSP violation would show here
    page.goto(server + "/doc/developer.chrome.com/docs/extensions/mv3/no-such-page")
    expect(page.locator("main")).to_contain_text(
        "dk-mirror fetch documents/developer.chrome.com/docs/extensions/mv3/no-such-page"
    )
    _shot(page, "08-not-mirrored")

    away = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not away, f"requests left 127.0.0.1: {away}"
    assert any(url.endswith("/static/style.css") for url in requests)


@pytest.fixture
def changed_store_path(store_path: Path) -> Path:
    """The same store after refreshes over the last weeks: a few pages changed, one with a
    deprecation notice (a signal), so the change log has a timeline to draw."""
    now = time.time()
    # Pages fetched 45 or 200 days ago, each changed since (the newest change first below).
    old = [d for i, d in enumerate(read_sample()) if _sample_age(i) > 30]
    chrome = [d for d in old if "developer.chrome.com" in d.name]
    tensorflow = next(d for d in old if "tensorflow" in d.name)
    edits = [
        (chrome[0], 1, "\n## Deprecated APIs\n\nThe `chrome.tts` voices API is deprecated.\n"),
        (chrome[1], 4, "\nA new paragraph.\n"),
        (chrome[2], 9, "\n## Keeping it alive\n\nMore text.\n"),
        (tensorflow, 15, "\nCache more.\n"),
        (tensorflow, 2, "\nCache less.\n"),
    ]
    with Mirror(Settings(db_url=f"sqlite:///{store_path}")) as mirror:
        changed = [
            (replace(doc, content=(doc.content or "") + extra).with_derived_fields(), days_ago)
            for doc, days_ago, extra in sorted(edits, key=lambda e: -e[1])
        ]
        seed_each(mirror, [(doc, now - days_ago * DAY) for doc, days_ago in changed])
    return store_path


@pytest.fixture
def changed_server(changed_store_path: Path) -> Iterator[str]:
    """`dk-mirror serve` on the store with changes."""
    yield from _serve(changed_store_path)


def test_changes_timeline_opens_a_diff_and_status_says_a_refresh_is_due(
    changed_server: str, browser_page: tuple[Any, list[str], list[str]]
) -> None:
    page, requests, console_errors = browser_page
    expect = playwright_api.expect

    page.goto(changed_server + "/changes")
    chart = page.locator("svg.timeline")
    expect(chart).to_be_visible()
    expect(chart).to_contain_text("developer.chrome.com/docs/extensions")
    assert chart.locator("circle.tone-signal").count() == 1  # the deprecation, a day ago
    assert chart.locator("circle.tone-changed").count() >= 3
    _shot(page, "09-changes")

    # The deprecation is listed first among the changes, marked, and opens its diff.
    signal = page.locator("ol.changes li.signal").first
    expect(signal).to_contain_text("deprecation notice added")
    signal.locator("a.what").click()
    expect(page.locator("h1")).to_have_text("History")
    expect(page.locator("table.diff tr.add").first).to_be_visible()
    expect(page.locator("table.diff")).to_contain_text("The `chrome.tts` voices API is deprecated.")
    assert page.locator("table.versions tbody tr").count() == 2
    _shot(page, "10-history-diff")

    # A section's dot narrows the page to that section.
    page.goto(changed_server + "/changes")
    chart.locator("a", has=page.locator("circle")).last.click()
    page.wait_for_url(re.compile(r"/changes\?prefix="))
    assert page.locator("ol.changes li").count() >= 1

    page.goto(changed_server + "/status")
    fresh = page.locator("svg.freshness-chart")
    expect(fresh).to_be_visible()
    expect(page.locator("p.verdict.due")).to_contain_text("dk-mirror refresh --older-than 7d")
    assert fresh.locator("g.row.due").count() == 2  # both sources hold copies 12-200 days old
    expect(fresh).to_contain_text("refresh due after 7d")
    _shot(page, "11-status-freshness")
    assert not console_errors, console_errors
    away = [url for url in requests if urlsplit(url).hostname != "127.0.0.1"]
    assert not away, f"requests left 127.0.0.1: {away}"
