"""Hostile HTML through the browser's sanitiser (nh3), with the links rewritten as a page does."""

from __future__ import annotations

import pytest

from mirror.render import links as web_links
from mirror.render import sanitize as web_sanitize

BASE = "https://developer.chrome.com/docs/extensions/mv3/page"
MIRRORED = {"documents/developer.chrome.com/docs/extensions/mv3/a11y"}
NO_IMAGE = '<span class="tpl tpl-media" title="image not available offline">image</span>'


def clean(markup: str) -> str:
    """`markup` as the document page would show it."""
    body = web_sanitize.parse(markup)
    return body.render(lambda href: web_links.classify(href, BASE, MIRRORED, set()))


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ("<p>a<script>alert(1)</script>b</p>", "<p>ab</p>"),
        ('<p onclick="x()" onmouseover="y()">hi</p>', "<p>hi</p>"),
        (
            '<div style="background:url(https://evil.example/x)">s</div><style>p{}</style>',
            "<div>s</div>",
        ),
        # Only http(s) (and mailto) links stay links; every other scheme loses its href.
        ('<a href="javascript:alert(1)">j</a>', "<a>j</a>"),
        ('<a href=" JaVa&#x09;Script:alert(1)">j</a>', "<a>j</a>"),
        ('<a href="data:text/html;base64,PHNjcmlwdD4=">d</a>', "<a>d</a>"),
        ('<a href="vbscript:x">v</a>', "<a>v</a>"),
        # svg and math go with everything inside them, links and scripts included.
        ('<svg><a href="https://e.example">s</a><script>1</script></svg>after', "after"),
        ("<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>", ""),
        # The parser breaks out of svg at <img> as a browser does; the image is still inert.
        ("<svg><style><img src=x onerror=alert(1)></style></svg>", NO_IMAGE),
        # The noscript mutation trick: the attribute text is never re-read as markup.
        (
            '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
            NO_IMAGE + '"&gt;',
        ),
        (
            '<img src="https://evil.example/p.png" alt="pixel" onerror="alert(1)">',
            '<span class="tpl tpl-media" title="image not available offline">image: pixel</span>',
        ),
        ('<img src="data:image/svg+xml;base64,PHN2Zz4=">', NO_IMAGE),
        (
            '<img src="data:image/png;base64,iVBORw0K" alt="dot">',
            '<img src="data:image/png;base64,iVBORw0K" alt="dot">',
        ),
        # Only our own classes survive; attribute text stays escaped.
        (
            '<p class="not-mirrored tpl-note hl-k evil" id="ok" title="&quot;&lt;x&gt;">c</p>',
            '<p class="tpl-note hl-k" id="ok" title="&quot;&lt;x&gt;">c</p>',
        ),
        (
            '<a href="https://github.com/x" class="doc-link" title="spoof">gh</a>',
            '<a href="https://github.com/x" rel="external noopener noreferrer" class="external"'
            ' title="external link">gh</a><span class="link-marker external-marker">↗</span>',
        ),
        (
            '<iframe srcdoc="<script>x</script>"></iframe><object data=x></object>'
            "<embed src=x><form action=x><input></form>",
            "",
        ),
        (
            '<base href="https://evil.example/"><meta http-equiv=refresh content="0;url=x">'
            "<link rel=stylesheet href=x>",
            "",
        ),
        ("</main></body><p>x", "<p>x</p>"),
        ("<!-- <script>x</script> --><p>c</p>", "<p>c</p>"),
        (
            '<a href="/docs/extensions/mv3/a11y">local</a>',
            '<a href="/doc/developer.chrome.com/docs/extensions/mv3/a11y" class="doc-link">'
            "local</a>",
        ),
    ],
)
def test_hostile_html_comes_out_inert(markup: str, expected: str) -> None:
    assert clean(markup) == expected


def test_markers_follow_the_link_they_belong_to_even_when_links_nest() -> None:
    # Inside a table cell the parser keeps an <a> inside another <a>: each marker must land
    # after its own link's end tag.
    markup = '<a href="https://a.example/"><table><tr><td><a href="https://b.example/">b</a>'
    out = clean(markup)
    marker = '<span class="link-marker external-marker">↗</span>'
    assert out.count(marker) == out.count("</a>") == out.count("<a ")
    assert out.index(">b</a>" + marker) > out.index('href="https://b.example/"')


def test_hrefs_are_collected_once_per_link_as_written() -> None:
    body = web_sanitize.parse(
        '<a href="../a11y?x=1&amp;y=2">a</a> <a href="javascript:x">j</a> <a name="n">n</a>'
    )
    assert body.hrefs == ["../a11y?x=1&y=2"]


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://developer.chrome.com/docs", True),
        ("http://example.com/", True),
        ("javascript:alert(1)", False),
        ("JAVASCRIPT:alert(1)", False),
        ("data:text/html,x", False),
        ("/doc/x", False),
        ("https:x", False),
        (" https://example.com/", False),
        ("https://exa\nmple.com/", False),
        (None, False),
    ],
)
def test_only_http_urls_count_as_web_urls(url: str | None, ok: bool) -> None:
    assert web_links.is_web_url(url) is ok


@pytest.mark.parametrize(
    ("href", "kept"),
    [
        ("../reference/side%2550anel.html#method-open", True),  # an export's page to page link
        ("index.html", True),
        ("javascript:alert(1)", False),
        ("data:text/html,x", False),
        ("//evil.example/x", False),
        ("java\tscript:x", False),
    ],
)
def test_an_exports_relative_links_survive_and_nothing_with_a_scheme(href: str, kept: bool) -> None:
    # The last check before an href is written: exports hand relative paths between their
    # files to `render`; a link mapper that returned anything with a scheme still loses it.
    body = web_sanitize.parse('<a href="x">x</a>')
    out = body.render(lambda _: web_links.Link(href, "local", "documents/a.example/x"))
    assert (f'href="{href}"' in out) is kept
