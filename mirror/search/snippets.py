"""Pick the part of a chunk that best shows why it matched, with the matched words marked."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from .language import content_words
from .lexical import CJK, STOPWORDS, stem_key

_WORD = re.compile(r"\w+", re.UNICODE)
# Between a heading and the text after it, so a snippet does not run them together.
HEADING_SEPARATOR = " — "
BULLET = "• "

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# Inline HTML elements: their tags go without a trace (`<a href="...">guide</a>.` reads
# "guide."); any other tag (`<br/>`, `<div>`, `<td>`) ends a line or a cell, so leaves a space.
# fmt: off
_INLINE = frozenset((
    "a", "abbr", "b", "bdi", "cite", "code", "del", "dfn", "em", "i", "ins", "kbd", "mark", "q",
    "s", "samp", "small", "span", "strong", "sub", "sup", "u", "var",
))
# fmt: on


def _tag(match: re.Match[str]) -> str:
    return "" if match.group(1).lower() in _INLINE else " "


# Markdown and template syntax that would clutter a one-line snippet, and what replaces it.
# Each pattern was met in the corpus (tests/test_snippets.py quotes the pages).
_NOISE: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    # A code fence line with its info string (```js, ```sh {: .devsite-terminal}), whole.
    (re.compile(r"(?m)^[ \t]*(?:```|~~~)[^\n]*$"), " "),
    # Comments (`<!--lint disable ...-->`) and template tags, across lines (`{% Img src="..."
    # alt="..." %}` spans several), but not past a bound: an unclosed one must not eat the page.
    (re.compile(r"<!--[\s\S]{0,2000}?-->"), " "),
    (re.compile(r"\{%[\s\S]{0,2000}?%\}"), " "),
    # A heading's id in kramdown's form (`## Interaction {#interaction}`, tensorflow.org) is
    # no comment: read as one, it ran on to the next `#}` and took the text between.
    (re.compile(r"\{#[\w.:-]+\}"), " "),
    (re.compile(r"\{#[\s\S]{0,2000}?#\}"), " "),
    (re.compile(r"\{:[^}]*\}"), " "),
    # A link reference definition (`[1]: /docs/extensions/reference/storage`), a whole line:
    # 616 pages of the corpus end with a list of them, which read as a run of URLs.
    (re.compile(r"(?m)^[ \t]{0,3}\[[^\]\n]+\]:[ \t]*\S[^\n]*$"), " "),
    # Link text may hold brackets of its own (`[[devtools] Use X](https://...)`), and a link
    # target parentheses (`(https://en.wikipedia.org/wiki/Foo_(bar))`), one level deep. Written
    # as unrolled loops (a run of plain characters, then bracketed groups each followed by
    # another run): an alternation tried per character took 3.7x as long on the corpus.
    # Images first: a linked image `[![alt](img)](href)` is then an ordinary link.
    (re.compile(r"!\[([^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]\([^()]*(?:\([^()]*\)[^()]*)*\)"), r"\1"),
    (re.compile(r"\[([^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]\([^()]*(?:\([^()]*\)[^()]*)*\)"), r"\1"),
    (re.compile(r"\[([^\[\]]*(?:\[[^\[\]]*\][^\[\]]*)*)\]\[[^\[\]]*\]"), r"\1"),
    # A tag is a name right after `<` (`a < b` is not one); its attributes may be long (an
    # `<img src="data:image/jpeg;base64,...">` runs to kilobytes).
    (re.compile(r"</?([A-Za-z][\w-]*)(?:\s[^<>]*)?/?>"), _tag),
    # A table: its delimiter row goes, and the pipes around a row's cells become separators.
    (re.compile(r"(?m)^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?)?[ \t]*$"), " "),
    (re.compile(r"(?m)^[ \t]*\|(.*?)\|?[ \t]*$"), lambda m: m.group(1).replace("|", "·")),
    # A blockquote's markers (`> Note: ...`, nested `>>`, 32 pages of the corpus): its text
    # stays. Before the bullets, so a quoted list item (`> * item`) is one too.
    (re.compile(r"(?m)^[ \t]{0,3}(?:>[ \t]?)+"), ""),
    # A list item's Markdown bullet becomes a typographic one (items run together on one line
    # and still read apart), and a backslash that breaks a line (`cookies.\` + newline) goes.
    (re.compile(r"(?m)^[ \t]*[*+-][ \t]+"), BULLET),
    (re.compile(r"(?m)\\$"), ""),
    # A definition list's definition (`: Allows your extension ...` on the line after its
    # term; 160 on 25 pages of the corpus): the term is set off from it as a heading is.
    (re.compile(r"\n[ \t]{0,3}:[ \t]+(?=\S)"), HEADING_SEPARATOR),
    # An ATX heading keeps its words (without closing #s) and is set off from the text after.
    (re.compile(r"(?m)^[ \t]{0,3}#{1,6}[ \t]+([^\n]*?)[ \t#]*$"), r"\1" + HEADING_SEPARATOR),
    # Bold markers and backticks; a lone `_` or `*` is as often part of an identifier.
    (re.compile(r"\*\*|__|`"), ""),
    # ... but one that wraps words from outside them is emphasis: `_always_`, `*not*`
    # (`snake_case_name` and `a * b` are left alone).
    # An escaped marker (`\*`) is not one: it is a character, unescaped below.
    # It may run over a paragraph's soft line breaks (`_Do not reply ... will be` + newline +
    # `fixed._`), never over a blank line.
    (
        re.compile(
            r"(?<![\w*\\])([*_])(?=[^\s*_])((?:[^\n]|\n(?![ \t]*\n))*?[^\s*_\\])\1(?![\w*])"
        ),
        r"\2",
    ),
    # CJK text sets emphasis against the characters around it, with no space ("過去*数十年*に
    # 渡って"; 127 on 66 pages of the corpus): a `*` pair with a CJK character just outside it
    # (or as its last one) is emphasis too, as CommonMark lets `*`, not `_`, emphasise inside
    # a word.
    (
        re.compile(
            # The `*` first, then what is before it: a pattern led by a literal scans fast.
            rf"\*(?<![^\W{CJK}]\*)(?<![*\\]\*)(?=[^\s*])([^\n*]*?[^\s*\\])\*"
            rf"(?:(?=[{CJK}])|(?<=[{CJK}]\*))"
        ),
        r"\1",
    ),
    # Markdown's backslash escapes in prose (`snake\_case`, `flags/\#enable`; 95 pages of the
    # corpus): the character itself. Code is shielded by then, and keeps its backslashes.
    (re.compile(r"\\([!-/:-@\[-`{-~])"), r"\1"),
)


# Code keeps its characters: an element in backticks (`<dialog>`), an index expression
# (`handlers[name](event)`) or `__init__` is what the sentence is about, not markup. Inside a
# code span or a fenced block they become character references before the patterns above run
# (which then leave them alone), and the unescape at the end brings them back.
_SHIELD = str.maketrans({c: f"&#{ord(c)};" for c in "<>[]{}()*_`#|\\-+~!"})
# Code spans: `x` (most), ``x`` (which may hold a backtick), and ```x``` on one line (a
# manifest page lists its keys so), within a paragraph (a stray backtick must not make code
# of the text up to the next one pages later). A fixed number of backticks each: one pattern
# with a backreference to any run took 4x as long on the corpus.
_CODE_SPAN = re.compile(r"`(?P<single>[^`\n]+(?:\n[^`\n]+)*)`")
_DOUBLE_SPAN = re.compile(r"``(?!`)(?P<double>(?:[^`]|`(?!`))+?)``")
_TRIPLE_SPAN = re.compile(r"```(?!`)(?P<triple>[^`\n]+)```(?!`)")
# A fenced block: its fence lines go (with the info string, ```js {: .devsite-terminal}), its
# lines stay (an unclosed fence: the _NOISE pattern drops its line alone). It may sit in a
# blockquote (`> ```python`, 2 pages of the corpus): its lines then lose their `>` markers.
_FENCED = re.compile(
    r"(?m)^[ \t]*(?P<quote>(?:>[ \t]?)*)(?P<fence>`{3,}|~{3,})[^\n]*\n(?P<fenced>[\s\S]*?)"
    r"^[ \t]*(?:>[ \t]?)*(?P=fence)[`~]*[ \t]*$"
)
_QUOTED = re.compile(r"(?m)^[ \t]*(?:>[ \t]?)+")
# An HTML code element (`<code>http://*/*</code>`; 15 pages of the corpus, among them a
# page of match patterns): its `*` and `_` are no emphasis ("http:///*", "tf.version"). Only
# those two are shielded: a link inside one (`<code>[RESET\_STREAM](...)</code>`) is a link.
_HTML_CODE = re.compile(r"<code(?:\s[^<>]*)?>(?P<html>[^<]*)</code>")
_MARKERS = re.compile(r"(?<!\\)[*_]")


# All in one left-to-right pass, so that no code is shielded twice: one pass each let the
# backticks one left over (a fence in a blockquote was no fence) pair with others around code
# shielded already, and its `>` came out as "&#62;" (5 pages of the corpus).
_CODE = re.compile(
    "|".join(p.pattern for p in (_FENCED, _TRIPLE_SPAN, _DOUBLE_SPAN, _CODE_SPAN, _HTML_CODE)),
    re.M,
)


def _code_shielded(match: re.Match[str]) -> str:
    code = match.groupdict()
    if code["fence"] is not None:
        fenced = _QUOTED.sub("", code["fenced"]) if code["quote"] else code["fenced"]
        return " " + fenced.translate(_SHIELD)
    if code["html"] is not None:
        return _MARKERS.sub(lambda m: f"&#{ord(m.group())};", match.group())
    span = code["triple"] or code["double"] or code["single"] or ""
    return span.translate(_SHIELD)


def _shielded(markdown: str) -> str:
    """`markdown` with the characters of its code as character references."""
    if "`" not in markdown and "~~~" not in markdown and "<code" not in markdown:
        return markdown
    return _CODE.sub(_code_shielded, markdown)


# A link reference definition's label (`[long tasks]: https://web.dev/...`), on its own line.
_DEFINITION = re.compile(r"(?m)^[ \t]{0,3}\[([^\[\]\n]+)\]:[ \t]*\S")
# A shortcut reference link (`see [long tasks].`): a bracketed label with no link target or
# second label after it (`[text](url)`, `[text][label]`, `[label]:`), nor before it (the
# label of `[text][label]`), and not escaped (`\[`).
_SHORTCUT = re.compile(r"(?<![\]\\])\[([^\[\]\n]+)\](?![(\[:])")


def _label_key(label: str) -> str:
    # As CommonMark matches a reference to its definition: case and runs of spaces ignored.
    return " ".join(label.split()).casefold()


def link_labels(page: str) -> frozenset[str]:
    """The link labels `page` (a whole page's Markdown) defines (`[label]: url` lines): what
    a shortcut reference `[label]` in any chunk of it points at (plain_text's `labels`)."""
    if "]:" not in page:
        return frozenset()
    return frozenset(_label_key(m.group(1)) for m in _DEFINITION.finditer(page))


def may_hold_shortcuts(markdown: str) -> bool:
    """Whether `markdown` may hold a shortcut reference link: else its page's labels are not
    needed (`link_labels`), and not worth reading the page for."""
    return "[" in markdown and _SHORTCUT.search(markdown) is not None


def plain_text(markdown: str, labels: frozenset[str] = frozenset()) -> str:
    """Markdown reduced to readable prose (links keep their text; HTML tags such as
    `<br/><div style="...">` and template tags go, entities are decoded; code keeps its
    characters): the one cleaning of page text for snippets, extractive answers and the
    browser's pages. `labels`: the link labels the page defines (`link_labels`); a shortcut
    reference to one (`[long tasks]`) reads as its text, any other bracket (`[x]`, `a[i]`
    outside code) stays."""
    markdown = _shielded(markdown)
    if labels:
        markdown = _SHORTCUT.sub(
            lambda m: m.group(1) if _label_key(m.group(1)) in labels else m.group(0), markdown
        )
    for pattern, replacement in _NOISE:
        markdown = pattern.sub(replacement, markdown)
    # Character references (`&mdash;`, `&amp;`) as the characters they stand for; whoever
    # shows the snippet escapes it for its own medium. One that names a control character
    # (`&#27;`) becomes a space: a terminal would act on it.
    markdown = _CONTROL.sub(" ", html.unescape(markdown))
    flat = " ".join(markdown.split())
    return flat.removesuffix(HEADING_SEPARATOR.rstrip()).rstrip()


def plain_title(title: str) -> str:
    """A page's title as text to show: character references decoded ("WebGPU
    (Chrome&nbsp;118)" in 7 of the corpus' titles), Markdown's code and bold marks gone (47
    titles hold "the CSS `@scope` at-rule"), white space folded. Unlike plain_text, an element
    a title names stays ("Picture-in-Picture for any Element, not just <video>"): a title is
    text, not HTML. Control characters become spaces (see `title_text` for a listing that
    shows them)."""
    return " ".join(_CONTROL.sub(" ", title_text(title)).split())


def title_text(title: str) -> str:
    """`plain_title` with its control characters kept, for `dk-mirror ls`, which shows each
    escaped (a store's odd title is seen, not hidden as spaces)."""
    return " ".join(html.unescape(title.replace("**", "").replace("`", "")).split())


def query_words(query: str) -> set[str]:
    """The lower-cased words of a query."""
    return {w.lower() for w in _WORD.findall(query)}


def _matcher(query: str) -> set[str]:
    """The stem keys of the query's words: a word of the text is marked when its key is one
    (search is stemmed: "otter" finds and marks "otters"). Stopwords ("to", "from") are left
    unmarked, as search leaves them out, unless the query has no other word."""
    # A question in another language: its articles and prepositions ("con", "un", "de") are
    # left unmarked too, as its ranking leaves them out (mirror.search.language).
    words = query_words(content_words(query))
    # A lone Latin letter is what an apostrophe leaves ("user's" -> "user", "s"): marking
    # every "s" of the window is noise. A lone CJK character is a word, and stays.
    content = {w for w in words if w not in STOPWORDS and not (len(w) == 1 and w.isascii())}
    content = content or words
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
    end = start + width
    if end < len(flat) and not flat[end].isspace():
        # The window would end inside a word, and mark a piece of it ("**tf**.**kera**…"):
        # end at the space before it, unless that loses a quarter of the window (a long URL,
        # a run of CJK text has no space to end at: it is cut at the width, as before).
        space = flat.rfind(" ", start, end)
        if space > start + width * 3 // 4:
            end = space
    window = flat[start:end]
    prefix = "…" if start > 0 else ""
    suffix = "…" if end < len(flat) else ""
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
