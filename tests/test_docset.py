"""`dk-mirror export docset`: a Dash/Zeal docset read back as Zeal reads it (Info.plist,
the searchIndex query, the file each entry opens), its links, its feed and archive, and the
export machinery's promises (identical bytes, nothing rewritten twice)."""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.exports.run import ExportReport
from mirror.service import Mirror
from mirror.store.store import Store
from mirror.symbols.model import TYPES

from .docset_reading import (
    EXTENSIONS,
    build_extensions,
    check_links,
    documents_dir,
    opened_file,
    read_plist,
    search_index,
)
from .store_templates import StoreTemplates

REF = EXTENSIONS + "reference/"
DASH_TYPES = {*TYPES, "Guide"}


@pytest.fixture
def pages_url(tmp_path: Path, store_templates: StoreTemplates) -> str:
    """A copy of a store of the tests corpus' 44 chrome extension pages."""
    return store_templates.copy("extensions", build_extensions, tmp_path / "store.sqlite3")


@pytest.fixture
def pages(pages_url: str) -> Iterator[Mirror]:
    with Mirror(Settings(db_url=pages_url, offline=True)) as mirror:
        yield mirror


def _export(mirror: Mirror, out: Path, **options: str | int) -> ExportReport:
    # One process: the fast tests fork no renderers (workers are tested below, marked slow).
    given = {"feed_url": out.as_uri(), "workers": 1, **options}
    return mirror.export("docset", out, options=given)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_zeal_finds_typed_symbols_and_opens_their_pages(pages: Mirror, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = _export(pages, out)
    docset = out / "dk-mirror.docset"
    info = read_plist(docset)
    assert info["isDashDocset"] is True and info["dashIndexFilePath"] == "index.html"
    assert (info["CFBundleIdentifier"], info["DocSetPlatformFamily"]) == ("dk-mirror", "dk")
    # Zeal's plain search: name LIKE '%query%'.
    assert search_index(docset, "chrome.tts.speak") == [
        ("chrome.tts.speak", "Method", "developer.chrome.com/docs/extensions/reference/tts.html")
    ]
    assert {(n, t) for n, t, _ in search_index(docset, "chrome.readingList")} >= {
        ("chrome.readingList", "Namespace"),
        ("chrome.readingList.query", "Method"),
    }
    rows = search_index(docset)
    assert {t for _, t, _ in rows} <= DASH_TYPES
    guides = [r for r in rows if r[1] == "Guide"]
    assert len(guides) == report.pages == 44
    # Every entry opens a file of the docset; side%50anel.html is written %2550 in the index.
    for name, _, path in rows:
        page, _fragment = opened_file(docset, path)
        assert page.is_file(), (name, path)
    side = [p for n, _, p in rows if n == "chrome.sidePanel"]
    assert side == ["developer.chrome.com/docs/extensions/reference/side%2550anel.html"]
    assert (documents_dir(docset) / "index.html").is_file()


def test_every_link_between_pages_resolves(pages: Mirror, tmp_path: Path) -> None:
    _export(pages, tmp_path / "out")
    checked = check_links(tmp_path / "out" / "dk-mirror.docset")
    assert checked.broken == []
    assert checked.internal > 100  # pages link to each other (and to the stylesheet, index)
    page = documents_dir(tmp_path / "out" / "dk-mirror.docset") / (
        "developer.chrome.com/docs/extensions/mv3/content_scripts.html"
    )
    html = page.read_text(encoding="utf-8")
    # Attribution on every page: the original and both licences.
    assert 'href="https://developer.chrome.com/docs/extensions/mv3/content_scripts"' in html
    assert "CC BY 4.0" in html and "Apache 2.0" in html
    # A page not in the docset stays a marked link to the web, never a dead relative one.
    assert 'class="not-mirrored"' in html


def test_two_exports_are_identical_and_a_second_rewrites_nothing(
    pages: Mirror, pages_url: str, tmp_path: Path
) -> None:
    first = _export(pages, tmp_path / "a")
    again = _export(pages, tmp_path / "a")
    assert (again.written, again.removed) == (0, 0)
    assert again.unchanged == first.files
    # Another folder, another run: the same bytes, the SQLite index and the archive included
    # (the feed names its folder, so it is compared apart).
    _export(pages, tmp_path / "b", feed_url=(tmp_path / "a").as_uri())
    assert _tree(tmp_path / "a") == _tree(tmp_path / "b")
    # One page changes: its page, the index, the archive and the feed are rewritten, no more.
    store = Store.open(pages_url)
    try:
        doc = store.get_many([REF + "tts"])[REF + "tts"].document
        changed = (doc.content or "") + "\n\nCall `chrome.tts.isSpeaking()` first.\n"
        store.put([replace(doc, content=changed)], fetched_at=2.0, upstream="test")
    finally:
        store.close()
    third = _export(pages, tmp_path / "a")
    assert third.written == 4
    docset = tmp_path / "a" / "dk-mirror.docset"
    assert search_index(docset, "isSpeaking")[0][:2] == ("chrome.tts.isSpeaking", "Method")


@pytest.mark.slow
def test_rendering_workers_write_the_same_bytes(pages: Mirror, tmp_path: Path) -> None:
    _export(pages, tmp_path / "one")
    _export(pages, tmp_path / "two", workers=2, feed_url=(tmp_path / "one").as_uri())
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")


def test_the_feed_points_at_an_archive_of_the_docset(pages: Mirror, tmp_path: Path) -> None:
    out = tmp_path / "out"
    _export(pages, out)
    feed = (out / "dk-mirror.xml").read_text(encoding="utf-8")
    url = feed.split("<url>")[1].split("</url>")[0]
    assert url == (out / "dk-mirror.tgz").as_uri()
    version = feed.split("<version>")[1].split("</version>")[0]
    assert len(version) == 12
    with tarfile.open(urlsplit(url).path) as archive:
        packed = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
        assert {m.mtime for m in archive} == {0}
    on_disk = {k: v for k, v in _tree(out).items() if k.startswith("dk-mirror.docset/")}
    assert packed == on_disk


def test_without_a_feed_url_the_docset_alone_and_a_note(pages: Mirror, tmp_path: Path) -> None:
    options = {"docset_name": "chrome-ext", "workers": 1}
    report = pages.export("docset", tmp_path / "out", options=options)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        ".dk-mirror-export.json",
        "NOTICE.md",
        "chrome-ext.docset",
    ]
    assert any("--feed-url" in note for note in report.notes)


def test_a_bad_docset_name_is_refused_before_anything_is_written(
    pages_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    for name in ("../escape", "a/b", ".hidden", ""):
        result = CliRunner().invoke(
            cli, ["export", "docset", str(out), "--docset-name", name, "--db", pages_url]
        )
        assert result.exit_code == 2, result.output
        assert "is not a plain file name" in result.output and "Traceback" not in result.output
    assert not out.exists() or not any(out.iterdir())
    for url in ("docs.example.com/dash", "javascript:alert(1)"):
        bad = ["export", "docset", str(out), "--feed-url", url, "--db", pages_url]
        result = CliRunner().invoke(cli, bad)
        assert result.exit_code == 2 and "is not an absolute http(s) or file URL" in result.output
    wrong = CliRunner().invoke(
        cli, ["export", "md", str(out), "--feed-url", "x", "--db", pages_url]
    )
    assert wrong.exit_code == 2 and "--feed-url is not an option of `export md`" in wrong.output
