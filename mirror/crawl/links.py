"""The links in a document's Markdown, as the document names a crawl may follow.

Only links a reader could click count: inline links `[text](target)`, reference definitions
`[label]: target`, autolinks `<https://...>` and HTML `<a href>`. Images are not pages, and
anything inside fenced code blocks or inline code spans is example text, not a link.
"""

from __future__ import annotations

import html
import re
import sys
from bisect import bisect_right
from collections.abc import Iterator
from functools import lru_cache
from urllib.parse import urljoin, urlsplit

from ..errors import InvalidName
from ..names import normalize

# A fence opens with 3+ backticks or tildes, indented at most 3 spaces (CommonMark); it is
# closed by a run of the same character at least as long, with nothing after it. Matched
# after a newline (the text gets one in front) rather than at `^` in MULTILINE mode: the
# search then jumps from newline to newline instead of trying every position (4x faster).
_FENCE = re.compile(r"\n {0,3}(`{3,}|~{3,})(.*)")
_TICKS = re.compile(r"`+")
# The middle of an inline link, `](target "title")`; its `[` is found by walking back. The
# target may hold one level of parentheses (Wikipedia-style URLs) or be <bracketed>.
_INLINE = re.compile(
    r"\]\(\s*(<[^<>\n]*>|(?:[^\s()<>]++|\([^\s()]*\))++)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\[\]\n]++\]:[ \t]*(<[^<>\n]*>|\S+)", re.MULTILINE)
_AUTOLINK = re.compile(r"<(https?://[^<>\s]+)>", re.IGNORECASE)
_HREF = re.compile(r"<a\s[^<>]*?\bhref\s*=\s*(?:\"([^\"]*)\"|'([^']*)')", re.IGNORECASE)
# How far back the `[` of a link's text may be: link texts are short; a page is not.
_MAX_TEXT = 1000


def _fences(markdown: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced code block, in order (an unclosed fence runs to the end)."""
    if "```" not in markdown and "~~~" not in markdown:
        return []
    blocks: list[tuple[int, int]] = []
    opened: tuple[int, str] | None = None  # where the open fence starts, and its run
    # Positions in "\n" + markdown are one past those in markdown: a match's start (its
    # newline) is the line's start in markdown, and its end one past the line's end.
    for match in _FENCE.finditer("\n" + markdown):
        run, rest = match.group(1), match.group(2)
        if opened is None:
            # A backtick fence's info string may not hold a backtick (then it is inline code).
            if not (run[0] == "`" and "`" in rest):
                opened = (match.start(), run)
        elif run[0] == opened[1][0] and len(run) >= len(opened[1]) and not rest.strip():
            blocks.append((opened[0], match.end() - 1))
            opened = None
    if opened is not None:
        blocks.append((opened[0], len(markdown)))
    return blocks


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the inline code spans in text[start:end] (one paragraph): a backtick
    run up to the next run as long; a run with no such closer is literal backticks."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text, start, end)]
    by_length: dict[int, list[int]] = {}
    for i, (first, last) in enumerate(runs):
        by_length.setdefault(last - first, []).append(i)
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        first, last = runs[i]
        same = by_length[last - first]
        after = bisect_right(same, i)
        if after == len(same):
            i += 1
            continue
        closer = same[after]
        spans.append((first, runs[closer][1]))
        i = closer + 1
    return spans


def _inside(position: int, ranges: list[tuple[int, int]]) -> bool:
    """True if `position` falls in one of the sorted, disjoint `ranges`."""
    i = bisect_right(ranges, (position, sys.maxsize)) - 1
    return i >= 0 and ranges[i][0] <= position < ranges[i][1]


class _Code:
    """Where a page's code is: fenced blocks, and inline spans found paragraph by paragraph
    (only the paragraphs that hold a link are ever scanned)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.fences = _fences(text)
        self.ticks = "`" in text
        self._spans: dict[int, list[tuple[int, int]]] = {}

    def holds(self, *positions: int) -> bool:
        """True if any of `positions` is inside code."""
        for position in positions:
            if self.fences and _inside(position, self.fences):
                return True
            if self.ticks and _inside(position, self._paragraph_spans(position)):
                return True
        return False

    def _paragraph_spans(self, position: int) -> list[tuple[int, int]]:
        text = self.text
        first = text.rfind("\n\n", 0, position) + 1
        spans = self._spans.get(first)
        if spans is None:
            last = text.find("\n\n", position)
            spans = self._spans[first] = _code_spans(text, first, len(text) if last < 0 else last)
        return spans


def _link_text_start(text: str, close: int) -> int | None:
    """Where the `[` of the link text that ends at `close` (its `]`) is, or None."""
    # The common case, a link text with no brackets in it, found without a walk in Python.
    opening = text.rfind("[", max(0, close - _MAX_TEXT + 1), close)
    if opening >= 0 and text.find("]", opening, close) < 0:
        return None if text.find("\n\n", opening, close) >= 0 else opening
    depth = 0
    for i in range(close - 1, max(-1, close - _MAX_TEXT), -1):
        char = text[i]
        if char == "]":
            depth += 1
        elif char == "[":
            if depth == 0:
                return i
            depth -= 1
        elif char == "\n" and i > 0 and text[i - 1] == "\n":
            return None  # a blank line ends the paragraph the text would be in
    return None


def link_targets(markdown: str) -> list[str]:
    """Every link target in `markdown`, in order of appearance, outside code; images left out."""
    text = markdown
    # (start, where the target begins, end, target); "" marks an image.
    found: list[tuple[int, int, int, str]] = []
    for m in _INLINE.finditer(text):
        start = _link_text_start(text, m.start())
        if start is not None:
            image = start > 0 and text[start - 1] == "!"
            found.append((start, m.start(), m.end(), "" if image else m.group(1)))
    if "]:" in text:
        found += [(m.start(), m.start(1), m.end(), m.group(1)) for m in _REFERENCE.finditer(text)]
    if "<" in text:
        found += [(m.start(), m.start(1), m.end(), m.group(1)) for m in _AUTOLINK.finditer(text)]
        found += [
            (m.start(), m.start(), m.end(), m.group(1) or m.group(2) or "")
            for m in _HREF.finditer(text)
        ]
    if not found:
        return []
    found.sort()
    code = _Code(text)
    out: list[str] = []
    end = 0
    for start, middle, stop, target in found:
        if start < end or code.holds(start, middle):
            continue  # inside a link already taken (an <autolink> as a target), or in code
        end = stop
        if target:
            out.append(target.strip("<>").strip())
    return out


def name_of_url(url: str) -> str | None:
    """The document name an absolute http(s) URL points at, or None if it cannot be one."""
    try:
        parts = urlsplit(url)
        # Documents live on plain hosts: no credentials, no port (also: a bad port raises).
        if parts.username or parts.password or parts.port:
            return None
    except ValueError:  # a malformed IPv6 host, a port out of range
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return _name(f"{parts.hostname}{parts.path}")


def resolve(base_uri: str, target: str) -> str | None:
    """The document name `target` points at from a page at `base_uri` (None if none)."""
    if "&" in target:
        target = html.unescape(target)  # an <a href> attribute's entities
    if not target or target[0] == "#":
        return None  # the page itself
    # Fast paths for the common shapes (urljoin costs most of a crawl's link reading):
    # an absolute https URL, or a site-relative path, with no dot segments to resolve.
    path = target.split("#", 1)[0].split("?", 1)[0]
    if "/." not in path and "\\" not in path:
        if path.startswith(("https://", "http://")):
            rest = path.split("://", 1)[1]
            host = rest.split("/", 1)[0]
            if host and not any(c in host for c in "@:[]"):
                return _name(rest)
        elif path.startswith("/") and not path.startswith("//") and base_uri.startswith("https://"):
            host = base_uri[len("https://") :].split("/", 1)[0]
            return _name(host + path)
    try:
        absolute = urljoin(base_uri, target)
    except ValueError:
        return None
    return name_of_url(absolute)


# Pages of one site link to the same pages over and over (navigation, see-also lists):
# each host/path is turned into a name once, a miss (None) included. Bounded, so a long
# crawl's memory stays flat.
@lru_cache(maxsize=1 << 12)
def _name(host_and_path: str) -> str | None:
    try:
        return normalize(host_and_path)
    except InvalidName:
        return None


def linked_names(markdown: str, base_uri: str) -> Iterator[str]:
    """The document names `markdown` links to, first appearance order, no repeats."""
    seen: set[str] = set()
    for target in link_targets(markdown):
        name = resolve(base_uri, target)
        if name is not None and name not in seen:
            seen.add(name)
            yield name
