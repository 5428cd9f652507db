"""Text and queries for PostgreSQL's full-text search, pure: no SQL is run here.

PostgreSQL's default text-search parser is not FTS5's `unicode61` tokenizer. It keeps
`chrome.runtime.onMessage`, `web.dev` and `manifest.json` whole as one "host" or "file" token
(so `runtime` would not find them), and whether it folds `É` or splits `缓存。网络` at the
full stop depends on the database's locale. So both sides, documents and queries, are cut the
way unicode61 cuts them before PostgreSQL sees them (`normalized`): case folded, Latin
diacritics dropped, and every character that is neither a letter, a digit nor a mark made a
space. What is left is words and numbers, which the `english` configuration stems the same on
every server, whatever its locale.

Queries are planned once, by mirror.search.lexical (terms, identifiers, CJK bigrams, AND then
OR), as FTS5 match strings; `to_tsquery` translates such a string into tsquery syntax, so the
two backends search for the same thing. Every operand comes out single-quoted and holds only
letters, digits, marks and spaces: no user text is ever tsquery syntax.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from . import lexical

# Latin combining diacritics, dropped after NFKD decomposition (unicode61's remove_diacritics);
# other marks (Devanagari vowel signs, Japanese voicing marks) are part of their words.
_DIACRITICS = range(0x0300, 0x0370)


@cache
def _table() -> dict[int, str | None]:
    """str.translate table over the Basic Multilingual Plane: separators to spaces, Latin
    diacritics dropped (built once, ~40 ms; a per-character loop in Python would cost that
    for every large page)."""
    table: dict[int, str | None] = {code: None for code in _DIACRITICS}
    for code in range(0x10000):
        category = unicodedata.category(chr(code))
        if category[0] in "PSZC" and code not in table:
            table[code] = " "
    return table


# ASCII letters and digits kept (capitals folded), every other byte a space: most pages are
# ASCII, and bytes.translate cuts them at C speed (str.translate with a dict: ~3 MB/s).
_ASCII = (
    bytes((c | 0x20 if chr(c).isupper() else c) if chr(c).isalnum() else 0x20 for c in range(128))
    + b" " * 128
)


def normalized(text: str) -> str:
    """`text` cut the way the index cuts it: folded, Latin accents dropped, anything but
    letters, digits and marks turned into spaces (so `tf.keras.layers` is three words)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII).decode("ascii")
    decomposed = unicodedata.normalize("NFKD", text).translate(_table())
    # NFC puts Hangul syllables and Japanese voiced kana back together after NFKD.
    return unicodedata.normalize("NFC", decomposed).casefold()


# A quoted FTS5 string ("" inside is one quote) with an optional prefix star, a keyword, a
# parenthesis, or a column filter (`{title headings} :`): everything mirror.search.lexical
# produces.
_TOKEN = re.compile(r'\s*(?:"((?:[^"]|"")*)"(\*?)|(AND|OR)\b|([()])|\{([a-z ]+)\}\s*:)')

# The tsvector weight each FTS5 column's words carry on PostgreSQL (mirror.store.textindex.postgres.index):
# a column filter becomes a weight restriction. Body and side share D there, so a filter that
# names `side` also matches body words (broader than FTS5, never narrower).
_WEIGHTS = {"title": "A", "headings": "B", "description": "C", "body": "D", "side": "D"}
# A translated operand: quoted words, then an optional prefix star.
_QUOTED = re.compile(r"'((?:[^']|'')*)'(:\*)?")


def to_tsquery(match: str) -> str:
    """The tsquery text for an FTS5 match string of quoted phrases joined by AND and OR (in
    parentheses): phrases become quoted tsquery phrases (`<->` between their words), `AND` `&`,
    `OR` `|`. A phrase with nothing searchable left is dropped with its operator; '' when
    nothing is left at all. ValueError for a string the lexical planner never makes (a bug
    there, not user input: user text only ever reaches here inside quotes)."""
    tokens = _tokens(match)
    out, end = _expression(tokens, 0)
    if end != len(tokens):
        raise ValueError(f"unexpected {tokens[end]!r} in {match[:80]!r}")
    return out


def _tokens(match: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    while pos < len(match.rstrip()):
        found = _TOKEN.match(match, pos)
        if found is None:
            raise ValueError(f"cannot translate {match[pos : pos + 40]!r}")
        phrase, star, keyword, paren, columns = found.groups()
        if columns is not None:
            try:
                weights = sorted({_WEIGHTS[c] for c in columns.split()})
            except KeyError as exc:
                raise ValueError(f"no such column {exc} in {match[:80]!r}") from None
            tokens.append("{" + "".join(weights) + "}")
        elif phrase is not None:
            words = " ".join(normalized(phrase.replace('""', '"')).split())
            # Only letters, digits and marks remain, but a quote would end the operand early.
            tokens.append(
                "'" + words.replace("'", "''") + "'" + (":*" if star else "") if words else ""
            )
        else:
            tokens.append(keyword or paren)
        pos = found.end()
    return tokens


# FTS5 gives AND precedence over OR: an expression is conjunctions joined by OR.
_LEVELS = (("OR", " | "), ("AND", " & "))


def _expression(tokens: list[str], pos: int, level: int = 0) -> tuple[str, int]:
    """Operands joined by this level's keyword, each one the next level down."""
    keyword, operator = _LEVELS[level]
    parts: list[str] = []
    while True:
        if level + 1 < len(_LEVELS):
            part, pos = _expression(tokens, pos, level + 1)
        else:
            part, pos = _operand(tokens, pos)
        parts.append(part)
        if pos >= len(tokens) or tokens[pos] != keyword:
            return _join(parts, operator), pos
        pos += 1


def _operand(tokens: list[str], pos: int) -> tuple[str, int]:
    if pos >= len(tokens):
        raise ValueError("the match string ends where a phrase was expected")
    token = tokens[pos]
    if token == "(":
        inner, pos = _expression(tokens, pos + 1)
        if pos >= len(tokens) or tokens[pos] != ")":
            raise ValueError("unbalanced parenthesis")
        return (f"({inner})" if inner else ""), pos + 1
    if token in ("AND", "OR", ")"):
        raise ValueError(f"unexpected {token!r}")
    if token.startswith("{"):
        inner, pos = _operand(tokens, pos + 1)
        weights = token[1:-1]
        return _QUOTED.sub(lambda m: f"'{m[1]}':{'*' if m[2] else ''}{weights}", inner), pos
    return token, pos + 1


def _join(parts: list[str], operator: str) -> str:
    kept = [p for p in parts if p]
    if len(kept) > 1:
        return "(" + operator.join(kept) + ")"
    return kept[0] if kept else ""


# --- headlines ----------------------------------------------------------------------------------

# Scripts written without spaces (lexical's CJK ranges): each character is one word of the text
# a headline is cut from, so the query's bigrams can mark it (the index holds them as bigrams
# in the side column, a form that has no place in the text a user reads).
_CJK_CHAR = re.compile(f"[{lexical.CJK}]")
# A run of ASCII (cut 1:1 by the fast path) or one other character.
_PIECE = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]")


def headline_text(text: str) -> tuple[str, list[int]]:
    """`text` cut as `normalized` cuts it, with each CJK character a word of its own, and for
    every character of the cut text the index of the character of `text` it came from: what
    ts_headline reads and marks is the cut text, what the user sees is `text`."""
    pieces: list[str] = []
    origins: list[int] = []
    for found in _PIECE.finditer(text):
        start, piece = found.start(), found.group()
        if piece.isascii():
            pieces.append(normalized(piece))
            origins.extend(range(start, found.end()))
            continue
        cut = normalized(piece)
        if _CJK_CHAR.match(piece):
            cut = f" {cut} "
        pieces.append(cut)
        origins.extend([start] * len(cut))
    return "".join(pieces), origins


def headline_query(query: str) -> str:
    """The tsquery that marks a query's words in a headline's cut text: each word of each
    term, as SQLite's snippets mark them (`chrome.runtime.onMessage` marks its three words; a
    camelCase word's parts, which rank pages by their identifiers, mark nothing), and for CJK
    words their bigrams (phrases of characters). '' when nothing is left to mark."""
    operands: list[str] = []
    for term in lexical.query_terms(query):
        cjk = [part for part in term.parts if _CJK_CHAR.match(part)]
        for words in (*term.text.split(), *cjk):
            cut = " ".join(_CJK_CHAR.sub(lambda m: f" {m.group()} ", normalized(words)).split())
            if cut:
                operands.append(f"'{cut}'")
    return " | ".join(dict.fromkeys(operands))
