"""Document Markdown to (not yet sanitised) HTML: CommonMark + tables, Pygments for code.

The corpus is converted from site sources, so it carries template tags (`{% Aside %}`) and
kramdown attribute lists (`## Title {: #id }`). Both are turned into plain HTML here; the
output still goes through `web_sanitize`, which decides what survives.
"""

from __future__ import annotations

import html
import itertools
import re
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from mdit_py_plugins.deflist import deflist_plugin
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from ..search.headings import anchor_for, slug
from ..search.snippets import plain_text

# Pygments token classes get this prefix, so the sanitiser can tell them from a document's own
# classes (which it drops) and our stylesheet cannot be spoofed by document markup.
CODE_CLASS_PREFIX = "hl-"
PYGMENTS_STYLE = "default"
# ... and under a dark colour scheme (the page follows prefers-color-scheme).
PYGMENTS_DARK_STYLE = "github-dark"
# Lexing is regex-driven; a huge block is shown plain rather than risking a slow page.
_MAX_HIGHLIGHT = 200_000

_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_TAG = re.compile(r"\{%-?\s*(\w+)\s*(.*?)\s*-?%\}", re.DOTALL)
_IAL_LINE = re.compile(r"^\s*\{:[^}]*\}\s*$")
_HEADING_IAL = re.compile(r"\s*\{:\s*([^}]*)\}\s*$")
_ARG = re.compile(r""""([^"]*)"|'([^']*)'""")
_KW_ARG = re.compile(r"""(\w+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_COMMENT = re.compile(r"\{#.*?#\}", re.DOTALL)

# Container tags of the source sites, and the HTML element each becomes.
_CONTAINERS = {
    "Aside": "aside",
    "Details": "details",
    "DetailsSummary": "summary",
    "Compare": "div",
    "CompareCaption": "div",
    "Columns": "div",
    "Column": "div",
    "Blockquote": "blockquote",
}
# Template logic (Nunjucks): dropped, so both branches of an `if` show rather than its syntax.
_LOGIC = frozenset(
    [
        "raw",
        "endraw",
        "if",
        "elif",
        "else",
        "endif",
        "for",
        "endfor",
        "set",
        "endset",
        "from",
        "import",
        "macro",
        "endmacro",
        "block",
        "endblock",
    ]
)
# Widgets that pull in pictures, videos or live tables from the site: named, never fetched.
_MEDIA = {
    "Img": "image",
    "Video": "video",
    "YouTube": "video",
    "Codepen": "embedded demo",
    "Glitch": "embedded demo",
    "BrowserCompat": "browser support table",
    "AndroidBrowserSupportTable": "browser support table",
    "Widget": "widget",
    "CodelabsCallout": "codelab link",
}


def _words(args: str) -> list[str]:
    return [a or b for a, b in _ARG.findall(args)]


def _open_tag(tag: str, args: str) -> str:
    element = _CONTAINERS[tag]
    words = _words(args)
    kind = slug(words[0]) if words else ""
    classes = f"tpl tpl-{slug(tag)}" + (f" tpl-{kind}" if kind else "")
    if tag == "Details":
        return f'<details class="{classes}"' + (" open>" if "open" in args else ">")
    opened = f'<{element} class="{classes}">'
    if tag == "Aside" and kind:
        opened += f'<p class="tpl-label">{html.escape(kind.replace("-", " ").title())}</p>'
    if tag == "Compare":
        label = words[1] if len(words) > 1 else ("Do" if kind == "better" else "Don't")
        opened += f'<p class="tpl-label">{html.escape(label)}</p>'
    return opened


def _template_tag(match: re.Match[str], whole_line: bool) -> str:
    """One `{% ... %}` tag as harmless HTML (or text), never executed."""
    tag, args = match.group(1), match.group(2)
    gap = "\n\n" if whole_line else ""
    if tag in _CONTAINERS:
        # Blank lines around a block tag end any HTML block before it and let Markdown inside.
        return gap + _open_tag(tag, args) + gap
    if tag.startswith("end") and tag[3:] in _CONTAINERS:
        return gap + f"</{_CONTAINERS[tag[3:]]}>" + gap
    if tag == "Label":
        return '<span class="tpl-label">'
    if tag == "endLabel":
        return "</span>"
    if tag in _LOGIC:
        return ""
    if tag == "ChromeDate":
        return html.escape(" ".join(_words(args)))
    if tag in _MEDIA:
        kw = {k: a or b for k, a, b in _KW_ARG.findall(args)}
        words = _words(args)
        alt = kw.get("alt") or kw.get("title") or kw.get("id") or (words[0] if words else "")
        from .sanitize import media_placeholder

        return media_placeholder(_MEDIA[tag], alt)
    if tag in ("Partial", "include"):
        words = _words(args)
        shown = html.escape(words[0] if words else args)
        return f'{gap}<p class="tpl tpl-note">[shared snippet not included: {shown}]</p>{gap}'
    if tag.startswith("end"):
        return ""
    # Any other site tag: named in a muted note, its arguments never interpreted.
    return f'<span class="tpl tpl-note">[{html.escape(tag)}]</span>'


def _tags(text: str) -> str:
    """Replace every template tag in `text` (no code fences inside); tags may span lines."""

    def one(match: re.Match[str]) -> str:
        before = text[text.rfind("\n", 0, match.start()) + 1 : match.start()]
        after_end = text.find("\n", match.end())
        after = text[match.end() : after_end if after_end >= 0 else len(text)]
        return _template_tag(match, whole_line=not before.strip() and not after.strip())

    return _TAG.sub(one, _COMMENT.sub("", text))


def preprocess(markdown: str) -> str:
    """Replace template tags and attribute lists outside code fences with plain HTML."""
    out: list[str] = []
    prose: list[str] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opened:
            fence = opened.group(1)
            if prose:
                out.append(_tags("\n".join(prose)))
            prose = []
            out.append(line)
        elif not _IAL_LINE.match(line):
            prose.append(line)
    if prose:
        out.append(_tags("\n".join(prose)))
    return "\n".join(out)


def _heading_ids(state: StateCore) -> None:
    """Give headings ids: a kramdown `{: #id }` when present, else a slug of the text."""
    seen: set[str] = set()
    tokens = state.tokens
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or i + 1 >= len(tokens):
            continue
        inline = tokens[i + 1]
        explicit = None
        children = inline.children or []
        if children and children[-1].type == "text":
            match = _HEADING_IAL.search(children[-1].content)
            if match:
                children[-1].content = children[-1].content[: match.start()]
                ids = re.findall(r"#([\w-]+)", match.group(1))
                explicit = ids[0] if ids else None
        text = "".join(c.content for c in children if c.type in ("text", "code_inline"))
        # The one anchor rule, shared with type-ahead (which links to headings unrendered).
        token.attrSet("id", anchor_for(text, explicit, seen))


def _highlight(code: str, lang: str, _attrs: Any) -> str:
    if not lang or len(code) > _MAX_HIGHLIGHT:
        return ""  # markdown-it then prints the block escaped, unhighlighted
    try:
        lexer = get_lexer_by_name(lang.split()[0])
    except ClassNotFound:
        return ""
    spans = highlight(code, lexer, _formatter())
    return f'<pre class="highlight"><code>{spans}</code></pre>'


@lru_cache(maxsize=1)
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True, classprefix=CODE_CLASS_PREFIX)


def pygments_css() -> str:
    """The stylesheet for highlighted code, light and dark (static/pygments.css is this)."""
    dark = "\n".join("  " + rule for rule in _style_rules(PYGMENTS_DARK_STYLE))
    light = "\n".join(_style_rules(PYGMENTS_STYLE))
    return f"{light}\n@media (prefers-color-scheme: dark) {{\n{dark}\n}}\n"


def _style_rules(style: str) -> list[str]:
    formatter: HtmlFormatter[str] = HtmlFormatter(style=style, classprefix=CODE_CLASS_PREFIX)
    rules = str(formatter.get_style_defs(".highlight")).splitlines()
    # Docs elide code (`...` in JSON): the lexer calls that an error, and a red box around
    # every elision is noise, so error tokens are drawn like plain text. The page's own
    # stylesheet draws the block (its background follows the colour scheme).
    return [
        r
        for r in rules
        if f".{CODE_CLASS_PREFIX}err " not in r and not r.startswith(".highlight {")
    ]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # html=True: the corpus has real tables and links in raw HTML; the sanitiser, not the
    # Markdown parser, decides what of it is safe to keep.
    md = MarkdownIt("commonmark", {"html": True, "highlight": _highlight}).enable("table")
    # Pages use definition lists (a term, then `: definition` on the next line; 160 on 25
    # pages of the corpus): without this each pair runs together as one paragraph.
    md.use(deflist_plugin)
    md.core.ruler.push("heading_ids", _heading_ids)
    return md


def render(markdown: str) -> str:
    """A document's Markdown as HTML, before sanitising."""
    return render_with_toc(markdown)[0]


# Headings listed in a page's table of contents (h1 is the page's own title).
TOC_LEVELS = (2, 3)


def render_with_toc(markdown: str) -> tuple[str, list[tuple[int, str, str]]]:
    """The HTML (before sanitising) and the table of contents: (level, id, text) of each
    h2 and h3, from the same parse, so every entry's id is one the page carries."""
    md = _parser()
    tokens = md.parse(preprocess(markdown))
    toc = []
    for token, inline in itertools.pairwise(tokens):
        level = int(token.tag[1:]) if token.type == "heading_open" else 0
        if level in TOC_LEVELS:
            words = "".join(
                c.content for c in inline.children or [] if c.type in ("text", "code_inline")
            )
            toc.append((level, str(token.attrGet("id")), " ".join(words.split())))
    return str(md.renderer.render(tokens, md.options, {})), toc


def without_title(markdown: str, title: str | None) -> str:
    """The Markdown minus a leading `# Title` line that repeats the page's own heading."""
    head, _, rest = markdown.lstrip().partition("\n")
    if title and head.startswith("# ") and plain_text(head[2:]) == plain_text(title):
        return rest
    return markdown
