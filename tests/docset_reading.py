"""Reading a docset as Zeal and Dash do, for the docset tests: its plist, its search index,
the file each entry opens, and every link between its pages."""

from __future__ import annotations

import gzip
import json
import plistlib
import sqlite3
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from mirror.models import Document

CORPUS = Path(__file__).parent / "data" / "corpus" / "developer.chrome.com-en.jsonl.gz"
EXTENSIONS = "documents/developer.chrome.com/docs/extensions/"


def extension_pages() -> list[Document]:
    """The 44 pages of the tests' chrome corpus under docs/extensions/ (reference pages and
    the guides that link to them)."""
    with gzip.open(CORPUS, "rt", encoding="utf-8") as lines:
        docs = [Document.from_api(json.loads(line)) for line in lines]
    return [d for d in docs if d.name.startswith(EXTENSIONS)]


def build_extensions(db_url: str) -> None:
    """Store template: the extension pages."""
    from mirror.store.store import Store

    store = Store.open(db_url)
    try:
        store.put(extension_pages(), fetched_at=1.0, upstream="test")
    finally:
        store.close()


def read_plist(docset: Path) -> dict[str, object]:
    """Contents/Info.plist, parsed."""
    with (docset / "Contents" / "Info.plist").open("rb") as file:
        info: dict[str, object] = plistlib.load(file)
    return info


def search_index(docset: Path, like: str = "") -> list[tuple[str, str, str]]:
    """(name, type, path) rows whose name contains `like`, as Zeal's plain search asks."""
    db = sqlite3.connect(f"file:{docset / 'Contents/Resources/docSet.dsidx'}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT name, type, path FROM searchIndex WHERE name LIKE ? ORDER BY id",
            (f"%{like}%",),
        ).fetchall()
    finally:
        db.close()
    return [(str(n), str(t), str(p)) for n, t, p in rows]


def documents_dir(docset: Path) -> Path:
    """Contents/Resources/Documents."""
    return docset / "Contents" / "Resources" / "Documents"


def opened_file(docset: Path, path: str) -> tuple[Path, str]:
    """The file and fragment an index entry opens (Zeal reads its path as a URL path)."""
    parts = urlsplit(path)
    return documents_dir(docset) / unquote(parts.path), parts.fragment


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag in ("a", "link") and found.get("href"):
            self.hrefs.append(str(found["href"]))


def parsed(page: Path) -> _Links:
    """The hrefs and element ids of one HTML file."""
    links = _Links()
    links.feed(page.read_text(encoding="utf-8"))
    return links


@dataclass
class LinkCheck:
    """Internal links (and fragments into pages) of every page, and those that are broken."""

    internal: int = 0
    broken: list[str] | None = None
    fragments: int = 0
    missing_fragments: int = 0


def check_links(docset: Path) -> LinkCheck:
    """Follow every relative href of every page: the file must exist (a fragment into a page
    of the docset is counted, and whether the page has that id)."""
    root = documents_dir(docset)
    result = LinkCheck(broken=[])
    ids: dict[Path, set[str]] = {}
    for page in sorted(root.rglob("*.html")):
        for href in parsed(page).hrefs:
            parts = urlsplit(href)
            if parts.scheme or href.startswith("#"):
                continue
            result.internal += 1
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file() or not target.is_relative_to(root.resolve()):
                assert result.broken is not None
                result.broken.append(f"{page.relative_to(root)} -> {href}")
                continue
            if parts.fragment and target.suffix == ".html":
                result.fragments += 1
                held = ids.setdefault(target, parsed(target).ids)
                result.missing_fragments += unquote(parts.fragment) not in held
    return result
