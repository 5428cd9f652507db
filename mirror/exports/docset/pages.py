"""One mirrored document as a docset page: the browser's renderer and sanitiser (Markdown to
safe HTML), links to exported pages made relative, the rest marked as the browser marks them,
and the attribution every page carries."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ... import names as naming
from ...models import Document
from ...render import links
from .. import attribution
from ..site import PageRenderer
from .paths import INDEX, STYLE, href, page_path

# Ids of the rendered page: a symbol's anchor is kept only where the page has it.
_ID = re.compile(r'\sid="([^"]+)"')
LICENCE = (
    "Content from Google's documentation, licensed under "
    f'<a href="{attribution.CC_BY}">CC BY 4.0</a>; code samples under '
    f'<a href="{attribution.APACHE}">Apache 2.0</a>.'
)


@dataclass(frozen=True, slots=True)
class Page:
    """A rendered page: its document, path under Documents, bytes, title and element ids."""

    name: str
    path: PurePosixPath
    data: bytes
    title: str
    ids: frozenset[str]


def render_page(doc: Document, renderer: PageRenderer) -> Page:
    """`doc` as a standalone HTML page, rendered and linked as the site export renders it."""
    path = page_path(doc.name)
    base_uri = doc.uri if links.is_web_url(doc.uri) else naming.uri_of(doc.name)
    title = doc.title or doc.name
    content = renderer.body(doc, path)[1]
    original = (
        f'<a href="{html.escape(base_uri)}">{html.escape(base_uri)}</a>'
        if links.is_web_url(base_uri)
        else html.escape(base_uri)
    )
    updated = f" Updated upstream {html.escape(doc.update_time)}." if doc.update_time else ""
    page = (
        "<!DOCTYPE html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>\n'
        f'<link rel="stylesheet" href="{href(path, STYLE)}"></head>\n'
        f'<body><main><article class="document">\n<header class="doc-head">'
        f'<p class="crumbs"><a href="{href(path, INDEX)}">All pages</a></p>'
        f'<h1 class="doc-title">{html.escape(title)}</h1></header>\n'
        f'<div class="markdown">\n{content}\n</div>\n'
        f'<footer class="attribution"><p>Original: {original}.{updated} {LICENCE}</p></footer>\n'
        "</article></main></body></html>\n"
    )
    return Page(doc.name, path, page.encode("utf-8"), title, frozenset(_ID.findall(content)))


def index_page(titles: list[tuple[str, str]]) -> bytes:
    """The docset's start page: every page by name, `titles` being (name, title) sorted."""
    items: list[str] = []
    host = None
    for name, title in titles:
        here = name.split("/", 2)[1]
        if here != host:
            items.append(("</ul>\n" if host else "") + f"<h2>{html.escape(here)}</h2>\n<ul>")
            host = here
        target = href(INDEX, page_path(name))
        items.append(f'<li><a href="{target}">{html.escape(title)}</a></li>')
    if host:
        items.append("</ul>")
    body = "\n".join(items)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8"><title>Mirrored pages</title>\n'
        f'<link rel="stylesheet" href="{STYLE}"></head>\n'
        f'<body><main><article class="document"><h1>Mirrored pages</h1>\n{body}\n'
        f'<footer class="attribution"><p>{LICENCE} Each page links to its original.</p>'
        "</footer></article></main></body></html>\n"
    ).encode()
