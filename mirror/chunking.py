"""Text for local search: documents cut into chunks, and snippets cut from chunks.

Pure functions, no database: mirror/store/index.py stores and queries what these produce.

Chunks: upstream splits "at headings, about 1-2 KB" per chunk. Here: sections start at ATX headings
(never inside fenced code), runs of small sections are merged, big sections are cut at
paragraph boundaries (a fenced block counts as one paragraph), then at line boundaries. A single
line longer than the limit stays whole: cutting inside a line would split words and URLs.
Sizes are UTF-8 bytes. Pure and deterministic: the same content always gives the same chunks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

# Snippet markers around matched words: control characters never appear in documentation
# text, so callers can turn them into bold or <mark> without escaping ambiguities.
MARK_START = "\x02"
MARK_END = "\x03"
ELLIPSIS = "…"
# About 24 words of context around the matches, as FTS5 snippet(..., 24) gives.
SNIPPET_CHARS = 180
SNIPPET_CONTEXT = 40
# Windows tried per snippet: a chunk dense with matches has a good one early.
_WINDOWS = 24

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


# Snippets: the part of a chunk that shows why it matched.

# Tokens as FTS5's unicode61 sees them: runs of letters and digits ('_' separates).
_TOKEN = re.compile(r"[^\W_]+")


def word_tokens(text: str) -> list[str]:
    """The tokens of `text` as the index splits it (letters and digits; '_' separates)."""
    return _TOKEN.findall(text)


def _latin_bases() -> dict[int, str]:
    # Precomposed Latin letters with diacritics -> their base letter, as one-character
    # replacements so that folding keeps every offset (str.translate runs in C).
    table: dict[int, str] = {}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        decomposed = unicodedata.normalize("NFD", chr(code))
        if len(decomposed) > 1 and all(unicodedata.combining(c) for c in decomposed[1:]):
            table[code] = decomposed[0]
    return table


_BASES = _latin_bases()


def fold(text: str) -> str:
    """`text` with case and Latin diacritics folded, like the index's `remove_diacritics 2`."""
    return text.lower() if text.isascii() else text.translate(_BASES).lower()


def _fold_in_place(text: str) -> str:
    """`text` folded with every offset kept, so matches found in it map back to `text`."""
    folded = fold(text)
    if len(folded) == len(text):
        return folded
    # A few letters lower-case to two characters (U+0130): fold only those that keep one.
    return "".join(f if len(f := fold(c)) == 1 else c for c in text)


def _hits(folded: str, words: frozenset[str]) -> list[tuple[int, int, str]]:
    """(start, end, word) of every whole-token occurrence of `words`, in text order."""
    # str.find runs in C; tokenising the chunk or a regex alternation in Python cost more
    # than the FTS query itself.
    hits = []
    find = folded.find
    for word in words:
        size = len(word)
        at = find(word)
        while at >= 0:
            end = at + size
            # Whole tokens only: letters and digits on neither side ('_' separates).
            if not (at and folded[at - 1].isalnum()) and not folded[end : end + 1].isalnum():
                hits.append((at, end, word))
            at = find(word, end)
    hits.sort()
    return hits


def _best_window(hits: list[tuple[int, int, str]], size: int) -> int:
    """Where a window of `size` characters holds the most distinct words, then the most hits
    (the earliest such window): a little before one of the first _WINDOWS hits."""
    best, begin = (0, 0), 0
    counts: dict[str, int] = {}
    total = len(hits)
    j = 0
    for i in range(min(total, _WINDOWS)):
        first, _, word = hits[i]
        start = first - SNIPPET_CONTEXT if first > SNIPPET_CONTEXT else 0
        limit = start + size
        # Windows only move right, so hits enter at j and leave at i once each.
        while j < total and hits[j][1] <= limit:
            entering = hits[j][2]
            counts[entering] = counts.get(entering, 0) + 1
            j += 1
        if j <= i:
            j = i + 1  # this hit alone is wider than the window
            continue
        score = (len(counts), j - i)
        if score > best:
            best, begin = score, start
        counts[word] -= 1
        if not counts[word]:
            del counts[word]
    return begin


def snippet(text: str, words: frozenset[str], size: int = SNIPPET_CHARS) -> str:
    """About `size` characters of `text` where most of the (folded) `words` occur, each
    occurrence between MARK_START and MARK_END, with ELLIPSIS where text was cut."""
    if MARK_START in text or MARK_END in text:
        text = text.replace(MARK_START, "").replace(MARK_END, "")  # keep the markers unambiguous
    hits = _hits(_fold_in_place(text), words)
    begin = _best_window(hits, size)
    end = min(len(text), begin + size)
    if begin > 0:
        # Start at a whole word, never after the first hit of the window.
        token = _TOKEN.search(text, begin)
        if token and token.start() == begin and _TOKEN.match(text, begin - 1):
            token = _TOKEN.search(text, token.end())
        first_hit = next((h[0] for h in hits if h[0] >= begin), end)
        begin = min(token.start() if token else begin, first_hit)
        end = min(len(text), max(end, begin))
    if end < len(text):
        last_hit = max((h[1] for h in hits if begin <= h[0] and h[1] <= end), default=begin)
        cut = max(text.rfind(" ", begin, end), text.rfind("\n", begin, end))
        end = cut if cut > last_hit else end
    out = [ELLIPSIS] if begin > 0 else []
    position = begin
    for start, stop, _ in hits:
        if begin <= start and stop <= end:
            out += [text[position:start], MARK_START, text[start:stop], MARK_END]
            position = stop
    out.append(text[position:end])
    if end < len(text):
        out.append(ELLIPSIS)
    return "".join(out)
