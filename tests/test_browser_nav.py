"""Issue 30 in a real Chromium, with JavaScript on: type-ahead and its keys, the page tree,
the table of contents, dark mode and a phone's width, each checked on screenshots too.

One browser and one `dk-mirror serve` for the module (Debian's chromium through Playwright's
driver, as tests/test_browser.py does); each test opens its own context (colour scheme,
viewport). Screenshots land in tests/artifacts/browser-nav/; three are compared with the
expectations in tests/data/screenshots/ (same size, close colours: a page that lost its dark
mode, its layout or its content no longer looks like them). Set DK_MIRROR_UPDATE_SCREENSHOTS=1
to write new expectations after a deliberate change of look.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.serve_process import clean_env, serve
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, _need_chromium, _wait_ready
from tests.test_web_nav import MESSAGING, MV3, build_nav_store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

playwright_api = pytest.importorskip("playwright.sync_api")
Image = pytest.importorskip("PIL.Image")
ImageStat = pytest.importorskip("PIL.ImageStat")

HERE = Path(__file__).resolve().parent
ARTIFACTS = HERE / "artifacts" / "browser-nav"
EXPECTED = HERE / "data" / "screenshots"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 812}
DOC = "/doc/" + MESSAGING[10:]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`dk-mirror serve` over the navigation store, on 127.0.0.1 (any free port)."""
    folder = tmp_path_factory.mktemp("nav")
    path = folder / "nav.sqlite3"
    build_nav_store(f"sqlite:///{path}")
    with serve(path, env=clean_env(folder / "home")) as served:
        _wait_ready(served.url)
        yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module."""
    _need_chromium()
    with playwright_api.sync_playwright() as pw:
        launched = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    """Opens a page in a fresh context (`scheme`, `viewport`); checks nothing left 127.0.0.1
    and no console error was logged (a CSP violation would be one)."""
    contexts: list[Any] = []
    away: list[str] = []
    errors: list[str] = []

    def opener(scheme: str = "light", viewport: dict[str, int] = DESKTOP) -> Any:
        context = browser.new_context(color_scheme=scheme, viewport=viewport)
        contexts.append(context)

        def only_loopback(route: Any) -> None:
            if urlsplit(route.request.url).hostname == "127.0.0.1":
                route.continue_()
            else:
                away.append(route.request.url)
                route.abort()

        context.route("**/*", only_loopback)
        page = context.new_page()
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        return page

    yield opener
    for context in contexts:
        context.close()
    assert not away, f"requests left 127.0.0.1: {away}"
    assert not errors, errors


def _shot(page: Any, name: str) -> Any:
    """A screenshot of the viewport, saved for people to look at, as a PIL image."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    image = Image.open(path).convert("RGB")
    viewport = page.viewport_size
    assert image.size == (viewport["width"], viewport["height"])
    # Not blank: a page of one colour has no spread of brightness at all.
    assert ImageStat.Stat(image.convert("L")).stddev[0] > 20, f"{name} looks blank"
    return image


def _like_expected(image: Any, name: str) -> None:
    """`image` looks like tests/data/screenshots/NAME.png: same size, close average colour,
    and close 24x24 thumbnails (layout and light/dark), not pixel for pixel."""
    expected_path = EXPECTED / f"{name}.png"
    if os.environ.get("DK_MIRROR_UPDATE_SCREENSHOTS"):
        EXPECTED.mkdir(parents=True, exist_ok=True)
        image.save(expected_path, optimize=True)
    expected = Image.open(expected_path).convert("RGB")
    assert expected.size == image.size, name
    means = zip(ImageStat.Stat(image).mean, ImageStat.Stat(expected).mean, strict=True)
    assert all(abs(a - b) < 12 for a, b in means), f"{name}: colours differ from the expectation"
    small = [im.convert("L").resize((24, 24)) for im in (image, expected)]
    diff = sum(abs(a - b) for a, b in zip(small[0].tobytes(), small[1].tobytes(), strict=True))
    assert diff / (24 * 24) < 25, f"{name}: layout differs from the expectation"


def _luminance(image: Any, x: int, y: int) -> float:
    r, g, b = image.getpixel((x, y))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_typing_shows_results_and_the_keys_drive_them(server: str, open_page: Any) -> None:
    page = open_page()
    expect = playwright_api.expect
    page.goto(server + DOC)
    box = page.locator("header input[name=q]")
    panel = page.locator("#typeahead-panel")
    items = page.locator("#typeahead-list li[role=option]")

    page.keyboard.press("/")  # focuses the search box from anywhere on the page
    expect(box).to_be_focused()
    page.keyboard.type("chrome.scripting.exec", delay=20)
    expect(items.first).to_contain_text("chrome.scripting.executeScript")
    expect(items.first).to_have_class(re.compile(r"\bkind-symbol\b"))
    # The count says how many rows are shown, whatever the number.
    count_text = page.locator(".typeahead-count").inner_text()
    assert int(count_text.split()[0]) == items.count() >= 1
    _like_expected(_shot(page, "typeahead-light"), "typeahead-light")

    box.fill("")
    page.keyboard.type("messag", delay=20)
    expect(items.first).to_contain_text("Message passing")
    assert int(page.locator(".typeahead-count").inner_text().split()[0]) == items.count() > 2
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowDown")
    expect(items.nth(1)).to_have_attribute("aria-selected", "true")
    expect(box).to_have_attribute("aria-activedescendant", "typeahead-1")
    target = items.nth(1).locator("a").get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(server + target)

    page.keyboard.press("/")
    page.keyboard.type("port life", delay=20)
    expect(panel).to_be_visible()
    page.keyboard.press("Escape")
    expect(panel).to_be_hidden()
    page.keyboard.press("Escape")
    expect(box).not_to_be_focused()
    # Enter with nothing chosen runs the full search, as the form does without script.
    page.keyboard.press("/")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=port\+life"))
    expect(page.locator("li.result").first).to_be_visible()


def test_the_tree_opens_at_the_current_page_and_the_contents_lead_to_headings(
    server: str, open_page: Any
) -> None:
    page = open_page()
    expect = playwright_api.expect
    page.goto(server + DOC)
    tree = page.locator("nav.sidetree")
    current = tree.locator("a[aria-current=page]")
    expect(current).to_have_text("Message passing")
    expect(current).to_be_visible()
    # Scrolled into the tree's own view, not somewhere below it.
    box, shown = tree.bounding_box(), current.bounding_box()
    assert box["y"] <= shown["y"] and shown["y"] + shown["height"] <= box["y"] + box["height"]
    assert page.evaluate("window.scrollY") == 0
    _like_expected(_shot(page, "document-light"), "document-light")

    # A closed folder opens in place: its pages come from /tree.json.
    migrating = tree.locator("details[data-prefix$='/extensions/migrating/']")
    expect(migrating).not_to_have_attribute("open", "")
    migrating.locator("summary").click(position={"x": 4, "y": 8})  # the marker, not the link
    expect(
        migrating.locator("li.tree-page a", has_text="Migrate to a service worker")
    ).to_be_visible()

    # The table of contents jumps to the heading.
    page.locator("nav.toc a", has_text="Port lifetime").click()
    assert page.url.endswith("#port-lifetime")
    heading = page.locator("#port-lifetime")
    expect(heading).to_be_in_viewport()

    # Next: the following page of the folder.
    page.locator("nav.prev-next a[rel=next]").click()
    page.wait_for_url(server + "/doc/" + (MV3 + "nativeMessaging")[10:])
    expect(page.locator("nav.sidetree a[aria-current=page]")).to_have_text("Native messaging")


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_colours_follow_the_system_and_a_phone_needs_no_sideways_scroll(
    server: str, open_page: Any, scheme: str
) -> None:
    page = open_page(scheme, PHONE)
    for url in (DOC, "/", "/browse/developer.chrome.com/docs/extensions/mv3/", "/status"):
        page.goto(server + url)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], f"{url} scrolls sideways at 375 px ({width} px wide)"
    page.goto(server + "/search?q=service+worker+messages")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    # A page with pictures the mirror does not hold: quiet boxes, no [bracketed] text.
    page.goto(server + "/doc/" + (MV3 + "a11y")[10:])
    placeholder = page.locator(".markdown .tpl-media").first
    playwright_api.expect(placeholder).to_be_visible()
    assert not placeholder.inner_text().startswith("[")
    assert page.locator(".markdown img").count() == 0

    page.goto(server + DOC)
    image = _shot(page, f"document-phone-{scheme}")
    # The page first; the tree one tap away, opening at the current page.
    tree = page.locator("nav.sidetree")
    playwright_api.expect(tree.locator("a[aria-current=page]")).to_be_hidden()
    tree.locator(".sidetree-box > summary").click()
    playwright_api.expect(tree.locator("a[aria-current=page]")).to_be_in_viewport()
    # The page's background beside the text, and the text colour, follow the scheme.
    background = _luminance(image, 4, 400)
    color = page.evaluate("getComputedStyle(document.body).color")
    if scheme == "dark":
        assert background < 40, f"dark mode background is light ({background:.0f})"
        assert color == "rgb(230, 237, 243)"
    else:
        assert background > 215, f"light mode background is dark ({background:.0f})"
        assert color == "rgb(31, 35, 40)"
    if scheme == "dark":
        _like_expected(image, "document-phone-dark")
