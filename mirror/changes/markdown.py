"""A page's Markdown read as the parts a change is judged by: headings, code samples, prose
paragraphs, tables and notices, each normalized so layout alone never reads as a change.

Normalizing is what makes a change "cosmetic": whitespace, re-wrapped paragraphs, link
targets and table padding or alignment rows all vanish here, so two versions that differ
only in them parse to the same parts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# A table's alignment row: `---|:--:`, with or without outer pipes.
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
# [text](target "title") and [text][ref] keep their text; reference definitions go.
_INLINE_LINK = re.compile(r"(!?\[[^\]]*\])\((?:[^()\s]|\([^()]*\))*(?:\s+\"[^\"]*\")?\)")
_REF_LINK = re.compile(r"(\[[^\]]*\])\[[^\]]*\]")
_REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+\S+")
_AUTOLINK = re.compile(r"<(?:https?|mailto):[^>\s]+>")
_HREF = re.compile(r"""\b(href|src)=("[^"]*"|'[^']*')""")
# Attribute lists (`## Name {: #name }`, `[link](x){:.external}`): anchors and styling.
_ATTRIBUTES = re.compile(r"\{:[^}]*\}")
# Notice blocks: Google's sites write them as template tags, HTML asides or GitHub alerts.
_ASIDE_TAG = re.compile(r"\{%\s*Aside\s*(?:'(\w+)'|\"(\w+)\")?\s*%\}", re.I)
_ASIDE_END = re.compile(r"\{%\s*endAside\s*%\}", re.I)
_ASIDE_HTML = re.compile(r"<aside\b[^>]*class=[\"']([\w -]+)[\"'][^>]*>", re.I)
_ASIDE_HTML_END = re.compile(r"</aside>", re.I)
_ALERT = re.compile(r"^\s*>\s*\[!(\w+)\]", re.I)
_LEAD = re.compile(r"^\s*(?:\*\*|__)?(warning|caution|deprecated|important|note)\b\s*:?", re.I)


def normal(text: str) -> str:
    """`text` with link targets dropped and whitespace collapsed."""
    # Each pattern only where its first character occurs: most paragraphs have no link, and
    # a change to a long page is classified inside the write that stores it.
    if "[" in text:
        text = _INLINE_LINK.sub(r"\1", text)
        text = _REF_LINK.sub(r"\1", text)
    if "<" in text:
        text = _AUTOLINK.sub("<link>", text)
        text = _HREF.sub(r"\1", text)
    if "{:" in text:
        text = _ATTRIBUTES.sub("", text)
    return " ".join(text.split())


def cells(line: str) -> tuple[str, ...]:
    """A table row's cells, normalized (outer pipes and padding do not count)."""
    inner = line.strip()
    inner = inner.removeprefix("|").removesuffix("|")
    return tuple(normal(cell) for cell in inner.split("|"))


@dataclass(frozen=True, slots=True)
class Table:
    """A table, with the heading it sits under and the paragraph before it (its context)."""

    heading: str
    before: str  # the paragraph before the table
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @property
    def context(self) -> str:
        """The words around the table that say what it is about."""
        return f"{self.heading} {self.before}"


@dataclass(frozen=True, slots=True)
class Notice:
    """A notice a reader is meant to see: its type (warning, caution, note...) and text."""

    kind: str
    text: str


@dataclass
class Parts:
    """What a page is judged by, in page order."""

    headings: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)


def parse(markdown: str) -> Parts:
    """The parts of `markdown` (one pass over its lines)."""
    parts = Parts()
    lines = markdown.splitlines()
    heading = ""
    paragraph: list[str] = []
    last_paragraph = ""
    notice: tuple[str, list[str]] | None = None  # an open Aside: its kind and lines

    def end_paragraph() -> None:
        nonlocal paragraph, last_paragraph
        if paragraph:
            text = normal(" ".join(paragraph))
            if text:
                parts.paragraphs.append(text)
                last_paragraph = text
                lead = _LEAD.match(text)
                if lead and notice is None:
                    parts.notices.append(Notice(lead.group(1).lower(), text))
            paragraph = []

    i = 0
    while i < len(lines):
        line = lines[i]
        # Each pattern is tried only on lines holding its first character: a change to a long
        # page is classified inside the write that stores it.
        fence = _FENCE.match(line) if "`" in line or "~" in line else None
        if fence:
            end_paragraph()
            mark = fence.group(1)
            body = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                body.append(" ".join(lines[i].split()))
                i += 1
            parts.code.append("\n".join(b for b in body if b))
            i += 1
            continue
        tagged = "{%" in line or "<" in line
        opened = (_ASIDE_TAG.search(line) or _ASIDE_HTML.search(line)) if tagged else None
        if opened and notice is None:
            end_paragraph()
            kind = opened.group(1) or (opened.group(2) if opened.re is _ASIDE_TAG else "") or "note"
            notice = (kind.split()[0].lower(), [])
            line = line[opened.end() :]
        if notice is not None:
            closed = (_ASIDE_END.search(line) or _ASIDE_HTML_END.search(line)) if tagged else None
            notice[1].append(line[: closed.start()] if closed else line)
            if closed:
                text = normal(" ".join(notice[1]))
                parts.notices.append(Notice(notice[0], text))
                if text:
                    parts.paragraphs.append(text)
                notice = None
            i += 1
            continue
        alert = _ALERT.match(line) if ">" in line else None
        if alert:
            end_paragraph()
            body = [line[alert.end() :]]
            i += 1
            while i < len(lines) and lines[i].lstrip().startswith(">"):
                body.append(lines[i].lstrip()[1:])
                i += 1
            text = normal(" ".join(body))
            parts.notices.append(Notice(alert.group(1).lower(), text))
            parts.paragraphs.append(text)
            continue
        head = _HEADING.match(line) if "#" in line else None
        if head:
            end_paragraph()
            heading = normal(head.group(2))
            parts.headings.append(heading)
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
            end_paragraph()
            header = cells(line)
            i += 2
            rows = []
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append(cells(lines[i]))
                i += 1
            parts.tables.append(Table(heading, last_paragraph, header, tuple(rows)))
            continue
        if not line.strip() or _REF_DEF.match(line):
            end_paragraph()
        else:
            paragraph.append(line)
        i += 1
    end_paragraph()
    if notice is not None:  # an Aside never closed: it still says what it says
        parts.notices.append(Notice(notice[0], normal(" ".join(notice[1]))))
    return parts
