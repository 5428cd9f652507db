"""`dk-mirror export zim`: the ZIM read back with libzim's own reader (entries, links, metadata,
title and full-text search), a re-export with no change writes nothing, Ctrl-C leaves no partial
file, bad targets are refused, the missing extra is one line; and Debian's kiwix-serve serves a
page and a search over HTTP."""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest
from click.testing import CliRunner

import mirror.exports
from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import InvalidInput
from mirror.exports import zim, zim_stamp
from mirror.exports.site import page_path
from mirror.service import Mirror
from mirror.store.store import Store

from .store_templates import StoreTemplates, import_sample

libzim = pytest.importorskip("libzim", reason="the zim extra is not installed")
from libzim.reader import Archive  # noqa: E402
from libzim.search import Query, Searcher  # noqa: E402
from libzim.suggestion import SuggestionSearcher  # noqa: E402

NEWEST = "2026-03-04T05:06:07Z"
_HREF = re.compile(r'<(?:a|link)\b[^>]*?\bhref="([^"]*)"')


def _restamp(url: str, times: dict[str, str]) -> None:
    """Give documents an updateTime (the packaged sample has none)."""
    store = Store.open(url)
    try:
        cached = store.get_many(list(times))
        docs = [replace(cached[n].document, update_time=t) for n, t in times.items()]
        store.put(docs, fetched_at=2e9, upstream="test")
    finally:
        store.close()


def _change(url: str, name: str, content: str) -> None:
    store = Store.open(url)
    try:
        doc = store.get_many([name])[name].document
        store.put([replace(doc, content=content)], fetched_at=2e9, upstream="test")
    finally:
        store.close()


@pytest.fixture(scope="module")
def exported(
    store_templates: StoreTemplates, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """The sample, two pages given an updateTime, exported once for the module (read-only):
    the ZIM's path and the exported names."""
    folder = tmp_path_factory.mktemp("zim")
    url = store_templates.copy("sample", import_sample, folder / "store.sqlite3")
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        names = sorted(d.name for d in mirror.list_documents(None, 100))
        _restamp(url, {names[3]: "2025-01-02T00:00:00Z", names[9]: NEWEST})
        report = mirror.export("zim", folder / "docs.zim")
    assert (report.pages, report.files, report.written, report.unchanged) == (50, 1, 1, 0)
    return folder / "docs.zim", names


def _text(archive: Archive, path: str) -> str:
    return bytes(archive.get_entry_by_path(path).get_item().content).decode("utf-8")


def test_every_page_is_an_entry_and_every_internal_link_resolves(
    exported: tuple[Path, list[str]],
) -> None:
    path, names = exported
    archive = Archive(path)
    pages = [page_path(n).as_posix() for n in names]
    assert archive.main_entry.get_item().path == "index.html"
    # 50 pages and the main page are articles; 3 stylesheets and NOTICE.md are not.
    assert (archive.article_count, archive.entry_count) == (51, 55)
    index = _text(archive, "index.html")
    checked = 0
    for page, name in zip(pages, names, strict=True):
        body = _text(archive, page)
        assert f"<code>{name}</code>" in body and 'id="search-form"' not in body
        assert "Content-Security-Policy" not in body  # Kiwix puts its own scripts in pages
        for href in _HREF.findall(body):
            parts = urlsplit(href)
            if parts.scheme or href.startswith("#") or not parts.path:
                continue
            target = posixpath.normpath(
                posixpath.join(posixpath.dirname(page), unquote(parts.path))
            )
            assert archive.has_entry_by_path(target), (page, href)
            checked += 1
    assert checked > 200  # stylesheets, the main page, NOTICE.md and links between pages
    linked = {unquote(h) for h in _HREF.findall(index)}
    assert set(pages) <= linked
    notice = _text(archive, "NOTICE.md")
    assert "Creative Commons Attribution 4.0" in " ".join(notice.split())


def test_the_metadata_say_what_kiwix_needs_and_when_the_content_is_from(
    exported: tuple[Path, list[str]],
) -> None:
    archive = Archive(exported[0])

    def meta(key: str) -> str:
        return bytes(archive.get_metadata(key)).decode("utf-8")

    assert meta("Date") == "2026-03-04" and meta(zim.AS_OF_KEY) == NEWEST
    assert (meta("Creator"), meta("Publisher"), meta("Language")) == ("Google", "dk-mirror", "eng")
    assert meta("Name") == "dk-mirror_en_all"
    assert len(meta("Title")) <= 30 and len(meta("Description")) <= 80
    assert "2026-03-04" in meta("Description") and NEWEST in meta("LongDescription")
    assert "CC BY 4.0" in meta("License") and "Apache 2.0" in meta("License")
    assert meta("Source").split() == [
        "https://developer.chrome.com/",
        "https://www.tensorflow.org/",
    ]
    assert meta(zim.DIGEST_KEY).startswith("sha256:")
    assert archive.has_illustration(48)
    png = bytes(archive.get_illustration_item(48).content)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[16:24] == (48).to_bytes(4, "big") * 2


def test_full_text_and_title_search_find_the_page(exported: tuple[Path, list[str]]) -> None:
    path, names = exported
    archive = Archive(path)
    assert archive.has_fulltext_index and archive.has_title_index
    assert archive.check()  # the checksum, computed again over the new uuids, verifies
    # A word of one page's body, found by Xapian; and that page's title, by the title index.
    page = page_path(names[9]).as_posix()
    title = archive.get_entry_by_path(page).title
    body = re.sub(r"<[^>]*>", " ", _text(archive, page).split('<div class="markdown">')[1])
    words = re.findall(r"(?<![\w&-])[a-z]{9,}(?![\w-])", body)
    found = []
    for word in words:
        search = Searcher(archive).search(Query().set_query(word))
        hits = list(search.getResults(0, 100))
        if len(hits) <= 3:  # a rare word: the page must be among its few hits
            found.append(word)
            assert page in hits, (word, hits)
    assert found
    suggestions = list(SuggestionSearcher(archive).suggest(title).getResults(0, 10))
    assert page in suggestions


def test_a_re_export_with_no_change_writes_nothing_and_a_change_rewrites_the_file(
    sample: Mirror, sample_url: str, tmp_path: Path
) -> None:
    out, twin = tmp_path / "a.zim", tmp_path / "b.zim"
    sample.export("zim", out)
    before = out.stat().st_mtime_ns, out.read_bytes()
    again = sample.export("zim", out)
    assert (again.written, again.unchanged, again.files) == (0, 1, 1)
    assert any("not rewritten" in n for n in again.notes)
    assert (out.stat().st_mtime_ns, out.read_bytes()) == before
    # A second export is the same file, byte for byte: libzim's random uuids (the file's and
    # its two Xapian indexes') are replaced, and the checksum covering them still verifies.
    second = sample.export("zim", twin)
    assert not any("byte-identical" in n for n in second.notes)
    assert hashlib.sha256(twin.read_bytes()).digest() == hashlib.sha256(before[1]).digest()
    one = Archive(twin)
    assert one.has_checksum and one.check()
    name = sorted(d.name for d in sample.list_documents(None, 100))[7]
    _change(sample_url, name, "# Changed\n\nQuixotically rewritten words.\n")
    changed = sample.export("zim", out)
    assert (changed.written, changed.unchanged) == (1, 0)
    fresh = Archive(out)
    assert fresh.check() and fresh.uuid != one.uuid  # other pages, another book for Kiwix
    assert "Quixotically" in _text(fresh, page_path(name).as_posix())
    assert list(Searcher(fresh).search(Query().set_query("quixotically")).getResults(0, 5)) == [
        page_path(name).as_posix()
    ]


def test_a_zim_whose_bytes_are_not_as_libzim_wrote_them_is_left_alone(
    exported: tuple[Path, list[str]], tmp_path: Path
) -> None:
    # The uuids are rewritten only when the checksum libzim wrote matches the file as read: a
    # flipped byte (or a layout this libzim does not write) leaves every byte as it was.
    data = bytearray(exported[0].read_bytes())
    data[len(data) // 2] ^= 0xFF
    copy = tmp_path / "flipped.zim"
    copy.write_bytes(data)
    assert zim_stamp.stamp(copy, "sha256:other") == "the ZIM's checksum does not match its bytes"
    assert copy.read_bytes() == data
    copy.write_bytes(exported[0].read_bytes()[:-1])
    assert zim_stamp.stamp(copy, "sha256:other") == "the ZIM's checksum is not its last 16 bytes"


def test_ctrl_c_leaves_no_partial_zim_and_keeps_the_previous_one(
    sample: Mirror, tmp_path: Path
) -> None:
    out = tmp_path / "out" / "docs.zim"
    out.parent.mkdir()

    def interrupt(done: int, total: int) -> None:
        if done == 20:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sample.export("zim", out, progress=interrupt)
    assert list(out.parent.iterdir()) == []
    sample.export("zim", out)
    kept = out.read_bytes()
    with pytest.raises(KeyboardInterrupt):
        sample.export("zim", out, prefix="documents/developer.chrome.com/", progress=interrupt)
    assert list(out.parent.iterdir()) == [out] and out.read_bytes() == kept


def test_a_folder_or_a_file_it_did_not_write_is_refused(sample: Mirror, tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="is a folder; a zim export is one file"):
        sample.export("zim", tmp_path)
    foreign = tmp_path / "notes.zim"
    foreign.write_text("my notes\n")
    with pytest.raises(InvalidInput, match="exists and is not a dk-mirror zim export"):
        sample.export("zim", foreign)
    assert foreign.read_text() == "my notes\n"
    with pytest.raises(InvalidInput, match="does not exist"):
        sample.export("zim", tmp_path / "missing" / "docs.zim")


def test_without_libzim_export_zim_says_how_to_install_it_in_one_line(
    sample_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As if libzim were not installed: its import raises ImportError, and the module that
    # imports it is imported afresh.
    for module in [m for m in sys.modules if m == "libzim" or m.startswith("libzim.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.delitem(sys.modules, "mirror.exports.zim_archive", raising=False)
    monkeypatch.delattr(mirror.exports, "zim_archive", raising=False)
    result = CliRunner().invoke(
        cli, ["export", "zim", str(tmp_path / "d.zim"), "--db", sample_url, "--offline"]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert lines == [
        "error: export zim needs libzim (GPL-3.0, an optional extra): pip install 'dk-mirror[zim]'"
    ]
    assert not (tmp_path / "d.zim").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.slow
def test_kiwix_serve_serves_a_page_and_a_search(sample_url: str, tmp_path: Path) -> None:
    kiwix = shutil.which("kiwix-serve")
    if kiwix is None:
        pytest.skip("kiwix-serve is not installed (Debian: apt-get install -y kiwix-tools)")
    out = tmp_path / "docs.zim"
    # As a user runs it, and --json's stdout is nothing but the summary (libzim prints its
    # finishing steps to stdout; the export silences them).
    command = ["-m", "mirror", "export", "zim", str(out), "--db", sample_url, "--offline"]
    proc = subprocess.run([sys.executable, *command, "--json"], capture_output=True, check=True)
    assert json.loads(proc.stdout)["written"] == 1
    port = _free_port()
    server = subprocess.Popen(
        [kiwix, "--address=127.0.0.1", f"--port={port}", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=10) as client:
            search = _when_up(client, "/search", params={"content": "docs", "pattern": "storage"})
            assert search.status_code == 200
            hits = [h for h in _HREF.findall(search.text) if h.endswith(".html") and "/docs/" in h]
            assert len(hits) >= 3
            page = client.get(hits[0])
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            assert "Google developer documentation" in page.text and 'class="markdown"' in page.text
            assert "creativecommons.org/licenses/by/4.0" in page.text
            # The page's stylesheet, by its relative link, is served from the ZIM too.
            css = next(h for h in _HREF.findall(page.text) if h.endswith("_dk/style.css"))
            style = client.get(posixpath.normpath(posixpath.join(posixpath.dirname(hits[0]), css)))
            assert style.status_code == 200 and "text/css" in style.headers["content-type"]
    finally:
        server.terminate()
        server.wait(timeout=10)


def _when_up(client: httpx.Client, path: str, params: dict[str, str]) -> httpx.Response:
    deadline = time.monotonic() + 15
    while True:
        try:
            return client.get(path, params=params)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
