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
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mirror.config import Settings
from mirror.records import read_sample
from mirror.service import Mirror
from tests.conftest import seed

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
    ages = [0.1, 3, 12, 45, 200]
    with Mirror(Settings(db_url=f"sqlite:///{path}")) as mirror:
        for i, doc in enumerate(read_sample()):
            seed(mirror, [doc], fetched_at=now - ages[i % len(ages)] * DAY, upstream="sample")
    return path


@pytest.fixture
def server(store_path: Path) -> Iterator[str]:
    """`dk-mirror serve` on 127.0.0.1, any free port; yields its base URL."""
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
