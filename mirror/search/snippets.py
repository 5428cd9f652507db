"""Pick the part of a chunk that best shows why it matched, with the matched words marked."""

from __future__ import annotations

import html
import re

from .lexical import STOPWORDS, stem_key

_WORD = re.compile(r"\w+", re.UNICODE)
# Between a heading and the text after it, so a snippet does not run them together.
HEADING_SEPARATOR = " — "

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# Markdown and template syntax that would clutter a one-line snippet, and what replaces it.
_NOISE = (
    # A code fence line with its info string (```js, ```sh {: .devsite-terminal}), whole.
    (re.compile(r"(?m)^[ \t]*(?:```|~~~)[^\n]*$"), " "),
    (re.compile(r"\{%.*?%\}"), " "),
    (re.compile(r"\{:[^}]*\}"), " "),
    # Images first: a linked image `[![alt](img)](href)` is then an ordinary link.
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]*)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r"</?[A-Za-z][^<>]{0,300}>"), " "),
    # An ATX heading keeps its words (without closing #s) and is set off from the text after.
    (re.compile(r"(?m)^[ \t]{0,3}#{1,6}[ \t]+([^\n]*?)[ \t#]*$"), r"\1" + HEADING_SEPARATOR),
    # Bold markers and backticks; a lone `_` or `*` is as often part of an identifier.
    (re.compile(r"\*\*|__|`"), ""),
    # ... but one that wraps words from outside them is emphasis: `_always_`, `*not*`
    # (`snake_case_name` and `a * b` are left alone).
    (re.compile(r"(?<![\w*])([*_])(?=[^\s*_])([^\n]*?[^\s*_])\1(?![\w*])"), r"\2"),
)


def plain_text(markdown: str) -> str:
    """Markdown reduced to readable prose (links keep their text; HTML tags such as
    `<br/><div style="...">` and template tags go, entities are decoded): the one cleaning of
    page text for snippets, extractive answers and the browser's pages."""
    for pattern, replacement in _NOISE:
        markdown = pattern.sub(replacement, markdown)
    # Character references (`&mdash;`, `&amp;`) as the characters they stand for; whoever
    # shows the snippet escapes it for its own medium. One that names a control character
    # (`&#27;`) becomes a space: a terminal would act on it.
    markdown = _CONTROL.sub(" ", html.unescape(markdown))
    flat = " ".join(markdown.split())
    return flat.removesuffix(HEADING_SEPARATOR.rstrip()).rstrip()


def query_words(query: str) -> set[str]:
    """The lower-cased words of a query."""
    return {w.lower() for w in _WORD.findall(query)}


def _matcher(query: str) -> set[str]:
    """The stem keys of the query's words: a word of the text is marked when its key is one
    (search is stemmed: "otter" finds and marks "otters"). Stopwords ("to", "from") are left
    unmarked, as search leaves them out, unless the query has no other word."""
    words = query_words(query)
    content = {w for w in words if w not in STOPWORDS} or words
    return {stem_key(w) for w in content}


def best_window(text: str, query: str, width: int = 240) -> list[tuple[str, bool]]:
    """About `width` characters of `text` around the densest run of query words, as
    (segment, is_match) pairs; whitespace is folded so a snippet sits on one line."""
    flat = " ".join(text.split())
    wanted = _matcher(query)
    hits = [m for m in _WORD.finditer(flat) if stem_key(m.group()) in wanted]
    start = 0
    if hits:
        # Slide over the hits: the window starting at hit i covers hits up to start+width.
        best, best_count = 0, 0
        for i, hit in enumerate(hits):
            count = sum(1 for h in hits[i:] if h.end() <= hit.start() + width)
            if count > best_count:
                best, best_count = i, count
        start = max(0, hits[best].start() - width // 4)
        while start > 0 and not flat[start - 1].isspace():
            start -= 1
    window = flat[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(flat) else ""
    segments: list[tuple[str, bool]] = []
    last = 0
    for m in _WORD.finditer(window):
        if stem_key(m.group()) in wanted:
            if m.start() > last:
                segments.append((window[last : m.start()], False))
            segments.append((m.group(), True))
            last = m.end()
    segments.append((window[last:], False))
    if prefix:
        segments.insert(0, (prefix, False))
    if suffix:
        segments.append((suffix, False))
    return [(s, marked) for s, marked in segments if s]
