"""The headings of a Markdown page, outside fenced code: ATX headings (with a `{: #id }`
attribute list, as Google's pages write them) and the HTML headings generated API pages use."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..render.fences import outside_fences

_ATX = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_ATTRS = re.compile(r"\s*\{:?\s*([^}]*)\}\s*$")
_ATTR_ID = re.compile(r"#([\w-]+)")
_HTML = re.compile(r"^\s*<h([1-6])(?:\s[^>]*?\bid=\"([^\"]+)\")?[^>]*>(.*?)</h\1>", re.IGNORECASE)
_TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading's level, its text (code marks and attributes removed) and its explicit id."""

    level: int
    text: str
    id: str | None


def headings(markdown: str) -> Iterator[Heading]:
    """The page's headings in order; lines inside fenced code blocks are never headings."""
    for line in outside_fences(markdown.splitlines()):
        if line.lstrip().startswith("#"):
            atx = _ATX.match(line)
            if atx:
                yield _heading(len(atx.group(1)), atx.group(2))
        elif line.lstrip().startswith("<h"):
            html = _HTML.match(line)
            if html:
                yield Heading(
                    int(html.group(1)), _plain(_TAGS.sub("", html.group(3))), html.group(2)
                )


def _heading(level: int, raw: str) -> Heading:
    found_id = None
    attrs = _ATTRS.search(raw)
    if attrs:
        raw = raw[: attrs.start()]
        id_match = _ATTR_ID.search(attrs.group(1))
        found_id = id_match.group(1) if id_match else None
    return Heading(level, _plain(raw), found_id)


def _plain(text: str) -> str:
    return text.replace("`", "").strip()
