"""The docset opened in Zeal (Debian's `zeal`, installed by .ci/check) under Xvfb: Zeal takes
it as a Dash docset (it adds its own index to docSet.dsidx), serves its pages, answers a
`dash-plugin://` search for a symbol with its page, and the screen is kept as a PNG.

The test needs a display server and a desktop program: slow, and skipped (failed on CI) when
either is missing. The screenshot lands in tests/artifacts/zeal/ for people to look at, as
tests/test_browser.py's do; tests/data/zeal-docset.png is one, described in tests/data/README.md.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.service import Mirror

from .docset_reading import build_extensions
from .store_templates import StoreTemplates
from .xwd import png_bytes, read_rgb

pytestmark = pytest.mark.slow

ARTIFACTS = Path(__file__).resolve().parent / "artifacts" / "zeal"
QUERY = "chrome.tts.speak"
WAIT = 90.0  # Zeal's QtWebEngine starts in seconds, slower beside a CPU burner
_LISTENING = re.compile(r"Listening on (http://127\.0\.0\.1:\d+)")
_MOUNTED = re.compile(r"Mounted '[^']*' to '(/[^']+)'")


def _need(program: str) -> str:
    found = shutil.which(program)
    if found:
        return found
    message = f"{program} is missing: apt-get install zeal xvfb (.ci/check does)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _until(what: str, check, timeout: float = WAIT):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"Zeal did not {what} within {timeout:.0f} s")


@pytest.fixture
def display(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """An Xvfb display of its own (the number Xvfb picks) and the file its screen is in."""
    xvfb = _need("Xvfb")
    _need("zeal")
    screen = tmp_path / "fb"
    screen.mkdir()
    read, write = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write), "-screen", "0", "1280x800x24", "-fbdir", str(screen),
         "-nolisten", "tcp"],
        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        assert number.isdigit(), "Xvfb did not report its display"
        yield f":{number}", screen / "Xvfb_screen0"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def _index_names(dsidx: Path) -> set[str]:
    try:
        db = sqlite3.connect(f"file:{dsidx}?mode=ro", uri=True)
        try:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        finally:
            db.close()
    except sqlite3.Error:
        return set()  # Zeal is writing it


def _served(log: Path) -> str | None:
    # Zeal serves a docset's pages over its own loopback server, and says where in its log.
    text = log.read_text(errors="replace")
    listening, mounted = _LISTENING.search(text), _MOUNTED.search(text)
    return listening.group(1) + mounted.group(1) if listening and mounted else None


def _page_shown(screen: Path) -> bool:
    # The page pane (right of the results list): dark text on a light page, not a blank or
    # black screen. Counted on a grid of pixels.
    width, height, rgb = read_rgb(screen)
    dark = light = 0
    for y in range(120, min(height, 580), 4):
        for x in range(200, min(width, 860), 4):
            r, g, b = rgb[(y * width + x) * 3 : (y * width + x) * 3 + 3]
            light += r > 230 and g > 230 and b > 230
            dark += r < 90 and g < 90 and b < 90
    return light > 5000 and dark > 150


def test_zeal_opens_the_docset_and_finds_a_symbol(
    display: tuple[str, Path], tmp_path: Path, store_templates: StoreTemplates
) -> None:
    url = store_templates.copy("extensions", build_extensions, tmp_path / "store.sqlite3")
    out = tmp_path / "out"
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        mirror.export("docset", out, options={"feed_url": out.as_uri()})
    # Zeal writes its own index into docSet.dsidx: it gets a copy, as an installed docset.
    home, docsets = tmp_path / "home", tmp_path / "docsets"
    (home / ".config" / "Zeal").mkdir(parents=True)
    (home / ".config" / "Zeal" / "Zeal.conf").write_text(f"[docsets]\npath={docsets}\n")
    shutil.copytree(out / "dk-mirror.docset", docsets / "dk-mirror.docset")
    dsidx = docsets / "dk-mirror.docset" / "Contents" / "Resources" / "docSet.dsidx"
    name, screen = display
    log = tmp_path / "zeal.log"
    env = {**os.environ, "HOME": str(home), "DISPLAY": name, "QTWEBENGINE_DISABLE_SANDBOX": "1",
           "XDG_RUNTIME_DIR": str(tmp_path / "run")}  # fmt: skip
    (tmp_path / "run").mkdir(mode=0o700)
    with log.open("wb") as sink:
        zeal = subprocess.Popen(
            ["zeal", f"dash-plugin://query={QUERY}"], env=env, stdout=sink, stderr=sink
        )
    try:
        # A Dash docset to Zeal: it found the searchIndex table and indexed its names.
        _until(
            "index the docset", lambda: any(n.startswith("__zi_name") for n in _index_names(dsidx))
        )
        served = _until("serve the docset", lambda: _served(log))
        # Its server hands out our pages, a percent-escaped file name (side%50anel) included.
        for page in ("reference/tts.html", "reference/side%2550anel.html"):
            with urllib.request.urlopen(
                f"{served}/developer.chrome.com/docs/extensions/{page}", timeout=10
            ) as response:
                assert response.status == 200 and b"CC BY 4.0" in response.read()
        _until("show the symbol's page", lambda: _page_shown(screen))
        time.sleep(1.0)  # the last paint
        width, height, rgb = read_rgb(screen)
        png = png_bytes(width, height, rgb)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "docset.png").write_bytes(png)
        assert zeal.poll() is None, log.read_text(errors="replace")
    finally:
        zeal.terminate()
        try:
            zeal.wait(timeout=10)
        except subprocess.TimeoutExpired:
            zeal.kill()
            zeal.wait()
