"""Re-serialise untrusted HTML through an allow-list, rewriting links on the way.

Documents are untrusted input: whatever markup they carry is parsed with the standard
library's HTMLParser and written out again, keeping only listed tags and attributes,
escaping all text and attribute values, and closing every element it opened (so a stray
`</main>` or an unclosed `<table>` in a document cannot break the page around it).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

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
_VOID = frozenset({"br", "col", "hr", "img", "wbr"})
# Dropped together with everything inside them.
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
_GLOBAL_ATTRS = frozenset({"id", "title", "lang", "dir"})
_TAG_ATTRS = {
    "a": frozenset({"href", "name"}),
    "td": frozenset({"colspan", "rowspan"}),
    "th": frozenset({"colspan", "rowspan", "scope"}),
    "ol": frozenset({"start", "reversed"}),
    "details": frozenset({"open"}),
    "img": frozenset({"src", "alt", "width", "height"}),
}
# Classes a document may keep: ours from web_markdown (tpl-*, hl-*, highlight) only. Anything
# else is dropped so a document cannot dress text up as our "not mirrored" markers.
_CLASS_OK = re.compile(r"^(?:tpl(?:-[a-z0-9-]+)?|hl-[A-Za-z0-9-]+|highlight)$")
_ID_OK = re.compile(r"^[A-Za-z][\w.:-]{0,100}$")
_NUMBER_OK = re.compile(r"^\d{1,4}$")
# Only inline images survive (no external fetches); SVG is excluded as it can carry script.
_DATA_IMAGE = re.compile(r"^data:image/(?:png|gif|jpeg|webp);base64,[A-Za-z0-9+/=\s]+$")
_SAFE_HREF = re.compile(r"^(?:https?://|mailto:|/doc/|#)")

LINK_MARKERS = {
    "missing": ("not-mirrored", "not mirrored", "not mirrored"),
    "external": ("external", "external link", "↗"),
}


@dataclass(slots=True)
class _Open:
    tag: str
    suffix: str = ""  # written just after the closing tag (a link's marker)


@dataclass(slots=True)
class SafeHtml:
    """Parsed untrusted HTML: its link targets now, and a safe rendering once links are known."""

    events: list[tuple[str, str, list[tuple[str, str | None]]]] = field(default_factory=list)
    hrefs: list[str] = field(default_factory=list)

    def render(self, link_for: Callable[[str], Link]) -> str:
        """The safe HTML, each `<a href>` rewritten by `link_for`."""
        out: list[str] = []
        stack: list[_Open] = []
        for kind, value, attrs in self.events:
            if kind == "text":
                out.append(html.escape(value, quote=False))
            elif kind == "start":
                out.append(_start(value, attrs, stack, link_for))
            elif kind == "end":
                out.append(_end(value, stack))
        while stack:
            entry = stack.pop()
            out.append(f"</{entry.tag}>{entry.suffix}")
        return "".join(out)


def _attr_text(name: str, value: str) -> str:
    return f' {name}="{html.escape(value, quote=True)}"'


def _clean_attrs(tag: str, attrs: list[tuple[str, str | None]]) -> list[tuple[str, str]]:
    allowed = _GLOBAL_ATTRS | _TAG_ATTRS.get(tag, frozenset()) | {"class"}
    kept: list[tuple[str, str]] = []
    for name, raw in attrs:
        value = (raw or "").strip()
        if name not in allowed or name == "href":
            continue
        if name == "class":
            value = " ".join(c for c in value.split() if _CLASS_OK.match(c))
        elif name in ("id", "name"):
            value = value if _ID_OK.match(value) else ""
        elif name in ("colspan", "rowspan", "start", "width", "height"):
            value = value if _NUMBER_OK.match(value) else ""
        elif name == "src":
            value = value if _DATA_IMAGE.match(value) else ""
        elif name in ("open", "reversed"):
            kept.append((name, ""))
            continue
        if value:
            kept.append((name, value[:500]))
    return kept


def _start(
    tag: str,
    attrs: list[tuple[str, str | None]],
    stack: list[_Open],
    link_for: Callable[[str], Link],
) -> str:
    kept = _clean_attrs(tag, attrs)
    if tag == "img" and not any(n == "src" for n, _ in kept):
        # An image from elsewhere would be an external fetch: say what it was instead.
        alt = next((v for n, v in kept if n == "alt"), "")
        text = "[image not available offline" + (f": {alt}" if alt else "") + "]"
        return f'<span class="tpl tpl-media">{html.escape(text, quote=False)}</span>'
    suffix = ""
    if tag == "a":
        href = next((v or "" for n, v in attrs if n == "href"), None)
        if href is not None:
            link = link_for(href)
            kept = [(n, v) for n, v in kept if n not in ("class", "title")]
            if link.href and _SAFE_HREF.match(link.href):
                kept.insert(0, ("href", link.href))
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
    text = "<" + tag + "".join(_attr_text(n, v) if v else f" {n}" for n, v in kept) + ">"
    if tag not in _VOID:
        stack.append(_Open(tag, suffix))
    return text


def _end(tag: str, stack: list[_Open]) -> str:
    if not any(entry.tag == tag for entry in stack):
        return ""  # a close tag with no matching open one is dropped
    out = []
    while stack:
        entry = stack.pop()
        out.append(f"</{entry.tag}>{entry.suffix}")
        if entry.tag == tag:
            break
    return "".join(out)


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.result = SafeHtml()
        self._dropping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping or tag in _DROP_CONTENT:
            if tag not in _VOID:
                self._dropping.append(tag)
            return
        if tag not in _ALLOWED:
            return  # the tag goes; its text stays, escaped
        self.result.events.append(("start", tag, attrs))
        if tag == "a":
            href = next((v for n, v in attrs if n == "href"), None)
            if href is not None:
                self.result.hrefs.append(href)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._dropping or tag in _DROP_CONTENT or tag not in _ALLOWED:
            return
        self.result.events.append(("start", tag, attrs))
        if tag not in _VOID:
            self.result.events.append(("end", tag, []))

    def handle_endtag(self, tag: str) -> None:
        if self._dropping:
            if tag in self._dropping:
                while self._dropping and self._dropping.pop() != tag:
                    pass
            return
        if tag in _ALLOWED and tag not in _VOID:
            self.result.events.append(("end", tag, []))

    def handle_data(self, data: str) -> None:
        if not self._dropping:
            self.result.events.append(("text", data, []))


def parse(markup: str) -> SafeHtml:
    """Parse untrusted HTML into events; render them with `SafeHtml.render`."""
    collector = _Collector()
    collector.feed(markup)
    collector.close()
    return collector.result
