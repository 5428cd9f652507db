"""Text for local search: documents cut into chunks the way upstream cuts them.

Pure functions, no database: mirror/store/textindex/ stores and queries what these produce.

Chunks: upstream splits "at headings, about 1-2 KB" per chunk. Here: sections start at ATX headings
(never inside fenced code), runs of small sections are merged, big sections are cut at
paragraph boundaries (a fenced block counts as one paragraph), then at line boundaries. A single
line longer than the limit stays whole: cutting inside a line would split words and URLs.
Sizes are UTF-8 bytes. Pure and deterministic: the same content always gives the same chunks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Neighbouring pieces merge when either is below MIN_BYTES and together they fit in MAX_BYTES.
MIN_BYTES = 1024
MAX_BYTES = 2048
HEADING_SEPARATOR = " > "

# Lines that matter to the outline, found by one regex scan instead of a Python loop per line:
# an ATX heading (up to 3 spaces, 1-6 '#', then a space or the end of the line: CommonMark)
# or an opening code fence.
# Anchored on the newline before the line (the text gets one in front): a literal first
# character lets the regex engine skip ahead fast, where `^` in MULTILINE mode tries every
# position.
_SPECIAL = re.compile(
    r"\n {0,3}(?:(#{1,6})(?:[ \t]+([^\n]*?))?[ \t]*|(`{3,}|~{3,})([^\n]*))(?=\n|$)"
)
# An optional closing run of '#' and a trailing attribute list such as `{: #anchor }`, which
# the corpus' Markdown dialect puts on headings; neither is part of the heading's words.
_CLOSING = re.compile(r"(?:[ \t]+#+)?[ \t]*(?:\{[:#][^}]*\})?[ \t]*$")
# Blank lines (possibly several, possibly holding spaces) between paragraphs.
_PARAGRAPH_BREAK = re.compile(r"\n(?:[ \t]*\n)+")
# Every part of a piece is joined to the next by a blank line ("\n\n"); sizes count it.
_JOINER = "\n\n"
_JOIN = len(_JOINER)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document: its id ("c0", "c1", ...), heading path and Markdown text."""

    id: str
    heading: str
    text: str


@dataclass(slots=True)
class _Section:
    heading: str
    # The heading line, runs of plain text and whole fenced blocks, in order.
    blocks: list[str]
    sizes: list[int]
    # Plain text runs may be cut at their blank lines; headings and fenced blocks may not.
    splittable: list[bool]
    size: int

    def add(self, block: str, splittable: bool) -> None:
        size = _bytes(block) + _JOIN
        self.blocks.append(block)
        self.sizes.append(size)
        self.splittable.append(splittable)
        self.size += size


def _bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _heading_text(raw: str | None) -> str:
    if not raw:
        return ""
    return _CLOSING.sub("", raw).strip() if "#" in raw or "{" in raw else raw.strip()


def _closing_fence(fence: str) -> re.Pattern[str]:
    # The same character, at least as many, and nothing else on the line.
    return re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.M)


def _sections(content: str) -> Iterator[_Section]:
    """Sections in order: each starts at a heading (the first may have none)."""
    if "\r" in content:
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    content = "\n" + content  # for _SPECIAL; runs are stripped of newlines anyway
    path: list[tuple[int, str]] = []
    section = _Section("", [], [], [], 0)
    text_start = search_from = 0  # plain text runs from text_start to the next special line
    while True:
        found = _SPECIAL.search(content, search_from)
        end = found.start() if found else len(content)
        if found and found.group(3) and found.group(3)[0] == "`" and "`" in found.group(4):
            search_from = found.end()  # not a fence: a backtick fence's info has no backtick
            continue
        # Kept whole: only a section too big for one chunk is cut into paragraphs.
        run = content[text_start:end].strip("\n")
        if run.strip():
            section.add(run, True)
        if found is None:
            break
        if found.group(3):
            closing = _closing_fence(found.group(3)).search(content, found.end())
            # An unclosed fence runs to the end of the document.
            stop = closing.end() if closing else len(content)
            section.add(content[found.start() + 1 : stop], False)
        else:
            if section.blocks:
                yield section
            level = len(found.group(1))
            while path and path[-1][0] >= level:
                path.pop()
            title = _heading_text(found.group(2))
            if title:
                path.append((level, title))
            section = _Section(HEADING_SEPARATOR.join(t for _, t in path), [], [], [], 0)
            section.add(found.group(0)[1:], False)
            stop = found.end()
        # The newline at `stop` starts the next line for _SPECIAL.
        text_start = search_from = stop
        if text_start > len(content):
            break
    if section.blocks:
        yield section


def _units(section: _Section) -> Iterator[tuple[str, int]]:
    """A big section's blocks with its text runs cut into paragraphs, and their sizes."""
    for block, size, splittable in zip(
        section.blocks, section.sizes, section.splittable, strict=True
    ):
        if not splittable:
            yield block, size
            continue
        for paragraph in _PARAGRAPH_BREAK.split(block):
            paragraph = paragraph.strip("\n")
            if paragraph.strip():
                yield paragraph, _bytes(paragraph) + _JOIN


def _pieces(section: _Section) -> Iterator[tuple[str, list[str], int]]:
    """A section as (heading, parts, size) pieces of at most MAX_BYTES (but for single lines)."""
    if section.size <= MAX_BYTES:
        yield section.heading, section.blocks, section.size
        return
    parts: list[str] = []
    size = 0
    for block, block_size in _units(section):
        if block_size <= MAX_BYTES:
            if size and size + block_size > MAX_BYTES:
                yield section.heading, parts, size
                parts, size = [], 0
            parts.append(block)
            size += block_size
            continue
        # A huge paragraph or code block: fill up the current piece, then cut between lines.
        lines: list[str] = []
        for line in block.split("\n"):
            line_size = _bytes(line) + 1
            if size and size + line_size > MAX_BYTES:
                if lines:
                    parts.append("\n".join(lines))
                yield section.heading, parts, size
                parts, lines, size = [], [], 0
            lines.append(line)
            size += line_size
        parts.append("\n".join(lines))
        size += _JOIN - 1
    if parts:
        yield section.heading, parts, size


def chunk_markdown(content: str) -> list[Chunk]:
    """Chunks of `content` in document order, ids "c0", "c1", ...; [] when it is blank."""
    merged: list[tuple[str, list[str], int]] = []
    for section in _sections(content):
        for heading, parts, size in _pieces(section):
            small = merged and (merged[-1][2] < MIN_BYTES or size < MIN_BYTES)
            if small and merged[-1][2] + size <= MAX_BYTES:
                last = merged[-1]
                merged[-1] = (last[0], last[1] + parts, last[2] + size)
            else:
                merged.append((heading, parts, size))
    chunks: list[Chunk] = []
    for heading, parts, _ in merged:
        text = _JOINER.join(parts).strip("\n")
        if text.strip():
            chunks.append(Chunk(f"c{len(chunks)}", heading, text))
    return chunks


@functools.lru_cache(maxsize=32)
def recent_chunks(content: str) -> tuple[Chunk, ...]:
    """chunk_markdown for a search, of the last pages asked for: a long question's first pages
    are chunked to re-rank them (passages.py), then the ones shown for their best chunks
    (lexical.best_chunks); cutting them once saves most of what the re-ranking costs."""
    return tuple(chunk_markdown(content))


def headings(content: str) -> str:
    """The text of every ATX heading outside fenced code, one per line (what the index weighs
    above the body)."""
    if "\r" in content:
        content = content.replace("\r\n", "\n").replace("\r", "\n")
    content = "\n" + content
    out: list[str] = []
    search_from = 0
    while True:
        found = _SPECIAL.search(content, search_from)
        if found is None:
            return "\n".join(out)
        search_from = found.end()
        fence = found.group(3)
        if fence:
            if fence[0] == "`" and "`" in found.group(4):
                continue  # not a fence: a backtick fence's info has no backtick
            closing = _closing_fence(fence).search(content, found.end())
            if closing is None:
                return "\n".join(out)
            search_from = closing.end()
        else:
            title = _heading_text(found.group(2))
            if title:
                out.append(title)
