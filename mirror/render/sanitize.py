"""Sanitise untrusted HTML with nh3 (Ammonia), then rewrite its links.

Documents are untrusted input. nh3 parses them as a browser would (html5ever) and writes
out only the listed tags and attributes, with every text and attribute value escaped and
every element closed, so a stray `</main>` or an unclosed `<table>` in a document cannot
break the page around it. Our own code only touches nh3's clean output: each `<a href>` is
rebuilt from how its link classifies, and an image that would be an external fetch becomes
a note. The page's Content-Security-Policy (pages.py) stays as a second wall.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import nh3

from .links import Link

_ALLOWED = frozenset(
    [
        "a",
        "abbr",
        "aside",
        "b",
        "blockquote",
        "br",
        "caption",
        "cite",
        "code",
        "col",
        "colgroup",
        "dd",
        "del",
        "details",
        "dfn",
        "div",
        "dl",
        "dt",
        "em",
        "figcaption",
        "figure",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "i",
        "img",
        "ins",
        "kbd",
        "li",
        "mark",
        "ol",
        "p",
        "pre",
        "q",
        "s",
        "samp",
        "section",
        "small",
        "span",
        "strong",
        "sub",
        "summary",
        "sup",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "u",
        "ul",
        "var",
        "wbr",
    ]
)
# Dropped together with everything inside them (any other unlisted tag goes, its text stays).
_DROP_CONTENT = frozenset(
    [
        "script",
        "style",
        "iframe",
        "object",
        "embed",
        "noscript",
        "template",
        "textarea",
        "select",
        "title",
        "head",
        "svg",
        "math",
        "frameset",
        "applet",
    ]
)
_GLOBAL_ATTRS = frozenset({"id", "title", "lang", "dir", "class"})
_TAG_ATTRS = {
    "a": frozenset({"href", "name"}),
    "td": frozenset({"colspan", "rowspan"}),
    "th": frozenset({"colspan", "rowspan", "scope"}),
    "ol": frozenset({"start", "reversed"}),
    "details": frozenset({"open"}),
    "img": frozenset({"src", "alt", "width", "height"}),
}
# nh3 checks URL attributes (href, src) against these before our filter sees them; `data:`
# is here only for inline images: `_filter` keeps a `src` only when it is one, and a data:
# href is dropped by `links.classify` and again by `_SAFE_HREF`.
_URL_SCHEMES = frozenset({"http", "https", "mailto", "data"})
# Classes a document may keep: ours from markdown_html (tpl-*, hl-*, highlight) only. Anything
# else is dropped so a document cannot dress text up as our "not mirrored" markers.
_CLASS_OK = re.compile(r"^(?:tpl(?:-[a-z0-9-]+)?|hl-[A-Za-z0-9-]+|highlight)$")
_ID_OK = re.compile(r"^[A-Za-z][\w.:-]{0,100}$")
_NUMBER_OK = re.compile(r"^\d{1,4}$")
_NUMERIC = frozenset({"colspan", "rowspan", "start", "width", "height"})
# Only inline images survive (no external fetches); SVG is excluded as it can carry script.
_DATA_IMAGE = re.compile(r"^data:image/(?:png|gif|jpeg|webp);base64,[A-Za-z0-9+/=\s]+$")
# The last check before an href is written: only web links, our own pages and fragments.
_SAFE_HREF = re.compile(r"^(?:https?://|mailto:|/doc/|#)")
# ... and, for a static export (exports/site.py), a relative link between two of its pages:
# path segments without a scheme, percent-encoded, then an optional fragment.
_RELATIVE_HREF = re.compile(
    r"^(?:\.\./)*[A-Za-z0-9%._~-]+(?:/[A-Za-z0-9%._~-]+)*(?:#[^\s\"'<>]*)?$"
)

# nh3 escapes `<` and `>` in text and attribute values and double-quotes every value, so in
# its output every `<` opens a real tag and these two patterns read tags exactly.
_TAG = re.compile(r"<(/?)(a|img)\b([^>]*)>")
_ATTR = re.compile(r'\s([a-z-]+)(?:="([^"]*)")?')

LINK_MARKERS = {
    "missing": ("not-mirrored", "not mirrored", "not mirrored"),
    "external": ("external", "external link", "↗"),
}


@dataclass(frozen=True, slots=True)
class SafeHtml:
    """Sanitised HTML: its link targets now, and a rendering with rewritten links later."""

    clean: str
    hrefs: list[str] = field(default_factory=list)

    def render(self, link_for: Callable[[str], Link]) -> str:
        """The safe HTML, each `<a href>` rewritten by `link_for`."""
        out: list[str] = []
        suffixes: list[str] = []  # one per open <a>: written just after its closing tag
        at = 0
        for match in _TAG.finditer(self.clean):
            out.append(self.clean[at : match.start()])
            at = match.end()
            closing, tag, attrs = match.group(1), match.group(2), _attrs(match.group(3))
            if tag == "img":
                out.append(_image(match.group(0), attrs))
            elif closing:
                out.append("</a>" + (suffixes.pop() if suffixes else ""))
            else:
                start, suffix = _anchor(attrs, link_for)
                out.append(start)
                suffixes.append(suffix)
        out.append(self.clean[at:])
        return "".join(out)


def _attrs(text: str) -> dict[str, str]:
    """A tag's attributes from nh3's output, values unescaped."""
    return {name: html.unescape(value or "") for name, value in _ATTR.findall(text)}


def _tag(tag: str, attrs: list[tuple[str, str]]) -> str:
    return "<" + tag + "".join(f' {n}="{html.escape(v, quote=True)}"' for n, v in attrs) + ">"


def media_placeholder(kind: str, alt: str) -> str:
    """A quiet stand-in for a picture, video or live widget the page would fetch: a small
    muted box naming it (and its alt text), the reason in its tooltip, not bracketed text."""
    shown = " ".join(f"{kind}: {alt}".split()) if alt.strip() else kind
    return (
        f'<span class="tpl tpl-media" title="{html.escape(kind)} not available offline">'
        f"{html.escape(shown, quote=False)}</span>"
    )


def _image(original: str, attrs: dict[str, str]) -> str:
    if "src" in attrs:
        return original  # an inline data: image (the only src `_filter` keeps)
    # An image from elsewhere would be an external fetch: say what it was instead.
    return media_placeholder("image", attrs.get("alt", ""))


def _anchor(attrs: dict[str, str], link_for: Callable[[str], Link]) -> tuple[str, str]:
    """The start tag for one link and the marker to write after it."""
    if "href" not in attrs:
        return _tag("a", list(attrs.items())), ""
    link = link_for(attrs.pop("href"))
    kept = [(n, v) for n, v in attrs.items() if n not in ("class", "title")]
    local = link.kind == "local" and _RELATIVE_HREF.match(link.href or "")
    if link.href and (_SAFE_HREF.match(link.href) or local):
        kept.insert(0, ("href", link.href))
    suffix = ""
    if link.kind == "local":
        kept.append(("class", "doc-link"))
    elif link.kind in LINK_MARKERS:
        css, title, marker = LINK_MARKERS[link.kind]
        if link.kind == "missing" and link.name:
            title = f"not mirrored: dk-mirror fetch {link.name}"
        else:
            kept.append(("rel", "external noopener noreferrer"))
        kept += [("class", css), ("title", title)]
        suffix = f'<span class="link-marker {css}-marker">{html.escape(marker)}</span>'
    return _tag("a", kept), suffix


def _filter(tag: str, attr: str, value: str) -> str | None:
    """nh3's per-attribute check: the value to keep, or None to drop the attribute."""
    if attr == "href":
        return value
    value = value.strip()
    if attr == "class":
        return " ".join(c for c in value.split() if _CLASS_OK.match(c)) or None
    if attr in ("id", "name"):
        return value if _ID_OK.match(value) else None
    if attr in _NUMERIC:
        return value if _NUMBER_OK.match(value) else None
    if attr == "src":
        return value if _DATA_IMAGE.match(value) else None
    if attr in ("open", "reversed"):
        return ""
    return value[:500] or None


_ATTRIBUTES = {"*": set(_GLOBAL_ATTRS), **{tag: set(names) for tag, names in _TAG_ATTRS.items()}}


def parse(markup: str) -> SafeHtml:
    """Sanitise untrusted HTML and collect its link targets; render with `SafeHtml.render`."""
    clean = nh3.clean(
        markup,
        tags=set(_ALLOWED),
        clean_content_tags=set(_DROP_CONTENT),
        attributes=_ATTRIBUTES,
        attribute_filter=_filter,
        url_schemes=set(_URL_SCHEMES),
        link_rel=None,  # `_anchor` sets rel itself, per kind of link
        strip_comments=True,
    )
    hrefs = [
        _attrs(m.group(3))["href"]
        for m in _TAG.finditer(clean)
        if m.group(2) == "a" and not m.group(1) and ' href="' in m.group(3)
    ]
    return SafeHtml(clean, hrefs)
