"""A docset from documents and symbols: a pure function, files in and (path, bytes) out.

    NAME.docset/Contents/Info.plist
    NAME.docset/Contents/Resources/docSet.dsidx       searchIndex: symbols by type, pages as Guide
    NAME.docset/Contents/Resources/Documents/...      one .html per page, index.html, style.css
    NAME.tgz, NAME.xml                                the archive and the Dash feed pointing at it

Paths are relative to the export folder, in a fixed order, and every byte depends only on the
documents, the symbols and the spec (sorted entries, no clock), so two exports are identical
and a writer comparing bytes rewrites only what changed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, replace
from importlib.resources import files
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from ...errors import InvalidInput
from ...models import Document, data_source_of
from ...render.markdown_html import pygments_css
from ...symbols.choose import best
from ...symbols.extract import extract
from ...symbols.model import Symbol
from ..site import PageRenderer
from ..workers import ordered_map
from . import bundle
from .dsidx import dsidx_bytes
from .pages import Page, index_page, render_page
from .paths import DOCUMENTS, INDEX, STYLE, entry_path, page_path

# A page's entry in the search index, beside the symbols' own types.
GUIDE = "Guide"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

File = tuple[PurePosixPath, bytes]


@dataclass(frozen=True, slots=True)
class DocsetSpec:
    """What to call the docset, and where its archive will be served from (for the feed)."""

    name: str = "dk-mirror"
    title: str = "Google developer docs (dk-mirror)"
    keyword: str = "dk"
    # The URL of the folder the export is served from (file:// works): the feed names
    # `<feed_url>/<name>.tgz`. None: no archive and no feed.
    feed_url: str | None = None

    def check(self) -> None:
        """InvalidInput unless the name is one plain file name (it names folders and files)
        and the feed URL, if any, is an absolute http(s) or file URL."""
        if not _SAFE_NAME.match(self.name) or self.name.endswith("."):
            raise InvalidInput(
                f"docset name {self.name[:80]!r} is not a plain file name",
                hint="use letters, digits, '-', '_' and '.', e.g. --docset-name chrome-extensions",
            )
        if self.feed_url is not None:
            parts = urlsplit(self.feed_url)
            if parts.scheme not in ("http", "https", "file") or not (parts.path or parts.netloc):
                raise InvalidInput(
                    f"--feed-url {self.feed_url[:120]!r} is not an absolute http(s) or file URL",
                    hint="give where OUT will be served, e.g. https://docs.example/dash or "
                    "file:///home/me/docs-dash",
                )


# The renderer of the export in progress, for the worker processes (exports/workers.py) that
# inherit it when they fork; None outside an export.
_RENDERER: PageRenderer | None = None


def _render(doc: Document) -> tuple[Page, list[Symbol]]:
    """One document's page and symbols (in a worker process, or here)."""
    assert _RENDERER is not None
    return render_page(doc, _RENDERER), extract(doc.name, doc.content)


def docset_files(
    docs: Iterable[Document], exported: Collection[str], spec: DocsetSpec, *, workers: int = 1
) -> Iterator[File]:
    """The docset's files, pages streamed as `docs` (every name in `exported`, with content,
    in name order) arrive, rendered on `workers` processes (the same bytes however many).
    Its symbols are the symbol index's, read from these very pages (so a docset of a lock's
    versions has those versions' symbols); a symbol whose page is not exported is left out."""
    global _RENDERER
    spec.check()
    root = PurePosixPath(f"{spec.name}.docset")
    packed = bundle.Archive() if spec.feed_url is not None else None

    def out(path: PurePosixPath, data: bytes) -> File:
        if packed is not None:
            packed.add(path, data)
        return path, data

    docs_dir = root / DOCUMENTS
    yield out(root / "Contents/Info.plist", bundle.info_plist(spec.name, spec.title, spec.keyword))
    yield out(docs_dir / STYLE, _stylesheet())
    hosts = frozenset(data_source_of(n) for n in exported)
    _RENDERER = PageRenderer(frozenset(exported), hosts)
    titles: list[tuple[str, str]] = []
    ids: dict[str, frozenset[str]] = {}
    found: list[tuple[Symbol, str]] = []
    # Fields a page does not need (unknown upstream ones) stay here: a worker gets the rest.
    bare = (replace(doc, extra={}) for doc in docs)
    try:
        for page, symbols in ordered_map(_render, bare, workers=workers):
            titles.append((page.name, page.title))
            ids[page.name] = page.ids
            found += ((symbol, page.name) for symbol in symbols)
            yield out(docs_dir / page.path, page.data)
    finally:
        _RENDERER = None
    yield out(docs_dir / INDEX, index_page(sorted(titles)))
    entries = [(title, GUIDE, entry_path(page_path(name))) for name, title in titles]
    entries += _symbol_entries(best(found), ids)
    yield out(root / "Contents/Resources/docSet.dsidx", dsidx_bytes(entries))
    if packed is not None and spec.feed_url is not None:
        data = packed.finish()
        yield PurePosixPath(f"{spec.name}.tgz"), data
        url = f"{spec.feed_url.rstrip('/')}/{spec.name}.tgz"
        yield PurePosixPath(f"{spec.name}.xml"), bundle.feed(url, data)


def _symbol_entries(
    symbols: Iterable[Symbol], ids: dict[str, frozenset[str]]
) -> Iterator[tuple[str, str, str]]:
    for symbol in symbols:
        held = ids.get(symbol.document)
        if held is None:
            continue  # its page is not in this docset
        page = page_path(symbol.document)
        # An anchor the rendered page lacks would open at the top anyway: say so plainly.
        anchor = symbol.anchor if symbol.anchor in held else ""
        yield symbol.name, symbol.type, entry_path(page, anchor or "")


def _stylesheet() -> bytes:
    # The browser's own look: its stylesheet and the code colours.
    # The browser's stylesheet, read as package data: importing the web pages would pull in
    # jinja2 and starlette for a file.
    css = (files("mirror.serve.web") / "static" / "style.css").read_text(encoding="utf-8")
    return (css + "\n" + pygments_css()).encode()
