"""`export site`: a static HTML site of the pages, readable from disk, a USB stick or any host.

Pages are rendered and sanitised exactly as the browser of `dk-mirror serve` does
(render/markdown_html.py, sanitize.py, links.py) and styled by its stylesheets; links to
other exported pages become relative links, links to pages not exported point at their
original address and are marked "not mirrored". Search is site_search.py's index, read by
site_assets/search.js, with no server. Layout:

    OUT/index.html               every page, by data source and top folder
    OUT/search.html              full-text search (type to search; ?q= works too)
    OUT/<host>/<path>.html       one page per document (the md export's paths, .html)
    OUT/_dk/                     stylesheets, search.js and the search index

Rendering is the costly step (Markdown, Pygments, nh3: ~7 ms of CPU a page), so it runs on
one forked worker per core, up to MAX_WORKERS (workers.py; option `workers`, 1 for none).
"""

from __future__ import annotations

import contextlib
import html
import posixpath
from collections import defaultdict
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from .. import names as naming
from ..models import Document
from ..render import links as web_links
from ..render import markdown_html, sanitize
from ..search.snippets import plain_text
from ..snapshots.mdpaths import link_target, relative_path
from . import attribution
from .base import Entry, OutFile, Pages
from .site_search import SearchIndex
from .workers import cores, ordered_map

ASSETS = PurePosixPath("_dk")
INDEX = PurePosixPath("index.html")
SEARCH = PurePosixPath("search.html")
SITE_TITLE = "Google developer documentation"
# Documents cannot run script in the browser's pages either; here no page but search.html
# needs any, so the others forbid it outright (a second wall behind the sanitiser).
_NO_SCRIPT = "script-src 'none'; object-src 'none'; base-uri 'none'"


def page_path(name: str) -> PurePosixPath:
    """A document's HTML file: the md export's path with `.html`. A folder whose name ends
    in `.html` gets its dot escaped (`%2Ehtml`, as mdpaths does for `.md`), so a page's
    file never shares a path with a folder of pages."""
    md = relative_path(name)
    folders = [p[:-5] + "%2Ehtml" if p.endswith(".html") else p for p in md.parts[:-1]]
    return PurePosixPath(*folders, md.parts[-1][:-3] + ".html")


def href(from_file: PurePosixPath, to_file: PurePosixPath) -> str:
    """The relative link from one exported file to another."""
    return link_target(PurePosixPath(posixpath.relpath(to_file, from_file.parent)))


def _root(path: PurePosixPath) -> str:
    return "../" * (len(path.parts) - 1)


def _e(text: str | None) -> str:
    return html.escape(text or "", quote=True)


def shell(
    path: PurePosixPath, title: str, main: str, *, script: bool = False, reader: bool = False
) -> bytes:
    """A whole page at `path`: head, header with the search box, `main`, licence footer.
    `reader=True` for a page shown by a reader (Kiwix) that puts its own search box and
    scripts into it: no search box, and no script ban (the sanitiser still removes every
    script of the documents)."""
    root = _root(path)
    policy = (
        ""
        if script or reader
        else f'<meta http-equiv="Content-Security-Policy" content="{_NO_SCRIPT}">\n'
    )
    scripts = f'<script src="{root}{ASSETS}/search.js"></script>\n' if script else ""
    box = (
        f"""
    <form class="search-box" id="search-form" action="{root}{SEARCH}" method="get" role="search">
      <input type="search" id="search-input" name="q" placeholder="Search these docs" aria-label="Search these docs">
      <button type="submit">Search</button>
    </form>"""
        if not reader
        else ""
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
{policy}<title>{_e(title)} · {SITE_TITLE}</title>
<link rel="stylesheet" href="{root}{ASSETS}/style.css">
<link rel="stylesheet" href="{root}{ASSETS}/pygments.css">
<link rel="stylesheet" href="{root}{ASSETS}/site.css">
<link rel="icon" href="data:,">
{scripts}</head>
<body>
<header class="site-header">
  <div class="bar">
    <a class="brand" href="{root}{INDEX}">{SITE_TITLE}</a>{box}
  </div>
</header>
<main id="main">
{main}
</main>
<footer class="site-footer">
  <p>Google's developer documentation, exported by dk-mirror. Content under
  <a href="{attribution.CC_BY}" rel="license external noopener noreferrer">CC BY 4.0</a>, code samples under
  <a href="{attribution.APACHE}" rel="license external noopener noreferrer">Apache 2.0</a>;
  see <a href="{root}{attribution.NOTICE_PATH}">NOTICE.md</a>.</p>
</footer>
</body>
</html>
""".encode()


class PageRenderer:
    """Renders documents as the browser does, with links between exported pages made relative."""

    def __init__(
        self, names: frozenset[str], hosts: frozenset[str], *, reader: bool = False
    ) -> None:
        self.names = names
        self.hosts = hosts
        self.reader = reader  # see shell()

    def body(self, doc: Document, path: PurePosixPath) -> tuple[str, str]:
        """The page's sanitised HTML before and after its links are rewritten."""
        safe = sanitize.parse(
            markdown_html.render(markdown_html.without_title(doc.content or "", doc.title))
        )
        base = doc.uri if web_links.is_web_url(doc.uri) else naming.uri_of(doc.name)

        def link_for(target: str) -> web_links.Link:
            link = web_links.classify(target, base, self.names, self.hosts, current=doc.name)
            if link.kind != "local" or link.name is None:
                return link
            _, hash_, fragment = (link.href or "").partition("#")
            relative = href(path, page_path(link.name)) + (hash_ + fragment)
            return web_links.Link(relative, "local", link.name)

        return safe.clean, safe.render(link_for)

    def page(self, doc: Document, path: PurePosixPath, body: str) -> bytes:
        """The whole HTML page of one document."""
        title = doc.title or doc.name
        original = (
            f'<dt>Original</dt><dd><a class="external" href="{_e(doc.uri)}" '
            f'rel="external noopener noreferrer">{_e(doc.uri)}</a></dd>'
            if web_links.is_web_url(doc.uri)
            else ""
        )
        updated = (
            f"<dt>Updated upstream</dt><dd>{_e(doc.update_time)}</dd>" if doc.update_time else ""
        )
        about = plain_text(doc.description or "")
        description = f'<p class="description">{_e(about)}</p>' if about else ""
        main = f"""<nav class="crumbs" aria-label="Breadcrumbs"><a href="{_root(path)}{INDEX}">All pages</a> <span class="sep">/</span> {_e(doc.data_source or "")}</nav>
<article class="document">
<header class="doc-head">
  <h1 class="doc-title">{_e(title)}</h1>
  {description}
  <dl class="meta"><dt>Name</dt><dd><code>{_e(doc.name)}</code></dd>{original}{updated}</dl>
</header>
<div class="markdown">
{body}
</div>
</article>"""
        return shell(path, title, main, reader=self.reader)


def _section(entry: Entry) -> str:
    segments = entry.name.split("/")[2:]
    return segments[0] if len(segments) > 1 else ""


def index_page(entries: list[Entry], *, reader: bool = False) -> bytes:
    """index.html: every page, by data source, then top-level folder (`reader`: see shell();
    no link to search.html either)."""
    by_host: dict[str, dict[str, list[Entry]]] = defaultdict(lambda: defaultdict(list))
    for entry in entries:
        by_host[entry.data_source][_section(entry)].append(entry)
    search_them = "" if reader else f' <a href="{SEARCH}">Search them</a>.'
    parts = [
        f"<h1>{SITE_TITLE}</h1>",
        f'<p class="lead">{len(entries)} pages from {len(by_host)} data source(s).{search_them}</p>',
    ]
    for host in sorted(by_host):
        parts.append(f'<h2 id="{_e(host)}">{_e(host)}</h2>')
        for section in sorted(by_host[host]):
            if section:
                parts.append(f"<h3>{_e(section)}</h3>")
            rows = "\n".join(
                f'<li><a href="{href(INDEX, page_path(e.name))}">{_e(e.title or e.name)}</a></li>'
                for e in sorted(by_host[host][section], key=lambda e: e.name)
            )
            parts.append(f'<ul class="pages-list">\n{rows}\n</ul>')
    return shell(INDEX, "All pages", "\n".join(parts), reader=reader)


def search_page() -> bytes:
    """search.html: the box, the count and the results search.js fills in."""
    main = (
        "<h1>Search</h1>\n"
        '<p id="search-count" class="note" aria-live="polite">Type in the box above.</p>\n'
        '<ol id="search-results"></ol>\n'
        "<noscript><p>Search needs JavaScript; every page is listed on "
        f'<a href="{INDEX}">the index</a>.</p></noscript>'
    )
    return shell(SEARCH, "Search", main, script=True)


def assets() -> Iterator[OutFile]:
    """The stylesheets (the browser's own) and the search script."""
    web = resources.files("mirror.serve.web") / "static"
    mine = resources.files("mirror.exports") / "site_assets"
    yield OutFile(ASSETS / "pygments.css", (web / "pygments.css").read_bytes())
    yield OutFile(ASSETS / "search.js", (mine / "search.js").read_bytes())
    yield OutFile(ASSETS / "site.css", (mine / "site.css").read_bytes())
    yield OutFile(ASSETS / "style.css", (web / "style.css").read_bytes())


# Each worker holds a renderer (~50 MB): past four, memory grows faster than the gain.
MAX_WORKERS = 4
# The renderer of the export in progress, for the worker processes (workers.py) that inherit
# it when they fork; None outside an export (so one site export at a time per process).
_RENDERER: PageRenderer | None = None


class Rendered(NamedTuple):
    """One document's page, and what the search index takes from it."""

    path: PurePosixPath
    page: bytes
    clean: str  # the sanitised body
    title: str
    host: str
    description: str


def _render(doc: Document) -> Rendered:
    """One document's file and page (in a worker process, or here)."""
    assert _RENDERER is not None
    path = page_path(doc.name)
    clean, body = _RENDERER.body(doc, path)
    return Rendered(
        path,
        _RENDERER.page(doc, path, body),
        clean,
        doc.title or doc.name,
        doc.data_source or "",
        plain_text(doc.description or ""),
    )


def _bare(doc: Document) -> Document:
    # What a page needs, and nothing that may not pickle (a document's unknown `extra` fields).
    return Document(
        name=doc.name,
        uri=doc.uri,
        content=doc.content,
        description=doc.description,
        data_source=doc.data_source,
        title=doc.title,
        update_time=doc.update_time,
    )


class StaticSite:
    """One run of the site format; option `workers`, the processes that render (default:
    one per core, up to MAX_WORKERS)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        given = options.get("workers")
        self.workers = min(cores(), MAX_WORKERS) if given is None else max(1, int(given))
        self.notes: list[str] = []

    def files(self, pages: Pages) -> Iterator[OutFile]:
        """Each page, then the index, search page, assets and search index."""
        global _RENDERER
        _RENDERER = PageRenderer(pages.names, frozenset(e.data_source for e in pages.entries))
        search = SearchIndex()
        docs = (_bare(doc) for doc in pages.documents())
        try:
            with contextlib.closing(ordered_map(_render, docs, workers=self.workers)) as rendered:
                for one in rendered:
                    yield OutFile(one.path, one.page)
                    search.add(one.path.as_posix(), one.title, one.host, one.description, one.clean)
        finally:
            _RENDERER = None
        yield OutFile(INDEX, index_page(pages.entries))
        yield OutFile(SEARCH, search_page())
        yield from assets()
        yield from search.files()


FORMAT = StaticSite
