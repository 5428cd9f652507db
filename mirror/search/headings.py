"""The headings of a Markdown page and the anchors the browser gives them, without parsing it.

Type-ahead offers headings as places to jump to, so each needs the same `id` the browser's
renderer writes (render/markdown_html): a kramdown `{: #id }` when present, else a slug of
the heading's text, numbered `-2`, `-3` when repeated. This reads the ATX headings line by line
outside code fences, which is all the corpus uses, at a fraction of a full parse's cost.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from ..render.fences import outside_fences

_CANDIDATE = re.compile(r"^[ \t]{0,3}(?:#|`{3}|~{3}).*$", re.MULTILINE)
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_IAL = re.compile(r"\s*\{:\s*([^}]*)\}\s*$")
_IAL_ID = re.compile(r"#([\w-]+)")
_WORDISH = re.compile(r"[^a-z0-9]+")
_MARKUP = re.compile(r"[{\[<*_&\\]")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
# Inline syntax outside code spans whose characters are not part of the heading's text: images
# and links keep their text, template tags and HTML tags go, and emphasis markers.
_INLINE = (
    (re.compile(r"\{%.*?%\}"), ""),
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"</?[A-Za-z][^<>]{0,300}>"), ""),
    (re.compile(r"(?<![\w*])([*_]{1,2})(?=\S)(.*?\S)\1(?![\w*])"), r"\2"),
    # Backslash escapes (`\[`, `\$`) are the characters themselves.
    (re.compile(r"\\([!-/:-@\[-`{-~])"), r"\1"),
)


@dataclass(frozen=True, slots=True)
class Heading:
    """One heading: its level (1-6), its text as shown, and its anchor on the page."""

    level: int
    text: str
    anchor: str


def slug(text: str) -> str:
    """The anchor of a heading without an explicit id (what the renderer computes)."""
    return _WORDISH.sub("-", text.lower()).strip("-")


def heading_text(markdown: str) -> str:
    """A heading's Markdown as the plain text a reader sees."""
    # Code spans are literal (`<input>` stays); the rest loses its markup.
    if "`" not in markdown:
        return " ".join(_prose(markdown).split())
    parts: list[str] = []
    at = 0
    for code in _CODE_SPAN.finditer(markdown):
        parts.append(_prose(markdown[at : code.start()]))
        parts.append(code.group(2))
        at = code.end()
    parts.append(_prose(markdown[at:]))
    return " ".join("".join(parts).split())


def _prose(markdown: str) -> str:
    if not _MARKUP.search(markdown):
        return markdown  # most headings are plain words: no pattern can change them
    for pattern, replacement in _INLINE:
        markdown = pattern.sub(replacement, markdown)
    return html.unescape(markdown)


def headings(markdown: str) -> list[Heading]:
    """Every ATX heading outside code fences, in order, with the renderer's anchors."""
    out: list[Heading] = []
    seen: set[str] = set()
    # Only fence and heading lines matter; one scan finds them (most lines are neither).
    for line in outside_fences(found.group(0) for found in _CANDIDATE.finditer(markdown)):
        match = _ATX.match(line)
        if not match:
            continue
        raw, explicit = match.group(2), None
        ial = _IAL.search(raw)
        if ial:
            raw = raw[: ial.start()]
            ids = _IAL_ID.findall(ial.group(1))
            explicit = ids[0] if ids else None
        text = heading_text(raw)
        out.append(Heading(len(match.group(1)), text, anchor_for(text, explicit, seen)))
    return out


def anchor_for(text: str, explicit: str | None, seen: set[str]) -> str:
    """A heading's id: its explicit one, else the slug of its text; numbered `-2`, `-3` if
    the page already has it (`seen`, which this adds to)."""
    anchor = explicit or slug(text) or "section"
    base, n = anchor, 1
    while anchor in seen:
        n += 1
        anchor = f"{base}-{n}"
    seen.add(anchor)
    return anchor
