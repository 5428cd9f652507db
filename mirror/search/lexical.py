"""Lexical analysis for local search, pure: what the index holds beside the text, and queries.

The indexes (mirror/store) cut words at punctuation, case-fold them, drop accents and stem
English words, the same for documents and queries: tantivy's analyzer on SQLite
(text_index.py), PostgreSQL's `english` configuration there. Two things those cannot do are
done here, the same way for both sides:

- camelCase identifiers (`getUserMedia`, `onMessage`) are one token to the analyzers; their
  parts (`get user media`) go to a side column, so `user media` finds the page too. Dotted and
  snake_case identifiers (`chrome.runtime.onMessage`, `tf.keras.layers.Dense`) are split by
  the analyzers already: the query searches them whole as a phrase, then by their parts.
- CJK text (Chinese, Japanese, Korean) has no spaces, so a sentence would be one token; its
  runs go to the side column as overlapping bigrams, and a CJK query becomes a phrase of the
  same bigrams.
- The analyzers drop `@`, so `@scope` (a CSS at-rule; also `@media`, `@container`) was the
  word "scope" of any page. Each `@name` written in a page is also indexed as one marker word
  (`at_marker`), and a query word written `@name` requires it (Term.at), so pages naming the
  at-rule come first; pages with only the word follow (`fallback_words`). Where the marker
  goes differs by backend: SQLite appends the markers to the side column (`at_markers`, BM25
  counts them wherever they are); PostgreSQL writes each one just before the name it marks
  (`with_at_markers`), because ts_rank scores the words of an AND or a phrase by how near
  they are to each other, and a marker at the end of a page would be near none of them.

A query comes out as Terms: their words and bigram phrases (SQLite builds tantivy query
objects from them), and match strings in FTS5's syntax, each term a quoted string literal
(PostgreSQL translates those to tsquery: mirror.search.tsquery). No user text is ever query
syntax.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from . import cjk_words
from .chunking import Chunk, recent_chunks

# At most this many chunks of one page in a result list (the issue: a page of 10 results
# held a median of 5 distinct documents when chunks were ranked alone).
PER_DOCUMENT = 2
# A page's second chunk is shown only if it scores at least this share of its best one.
SECOND_CHUNK = 0.5
# Long queries cost one doclist per term; beyond this many they add little.
MAX_TERMS = 32
MAX_QUERY_CHARS = 4096
MAX_TERM_CHARS = 64

# Words that match nearly every page of developer docs and say nothing about which one: dropped
# from a query that has other words ("how do I migrate my extension" ranks by "migrate" and
# "extension"). Fitted to docs: question words, pronouns and auxiliaries, plus the verbs every
# how-to question uses ("use", "want", "need"). Product and API words ("google", "api", "page")
# stay: they are rare enough in a part of the mirror to matter there.
# fmt: off
STOPWORDS = frozenset((
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "done", "for",
    "from", "get", "gets", "getting", "had", "has", "have", "having", "how", "i", "if", "in",
    "into", "is", "it", "its", "me", "my", "need", "needs", "of", "on", "or", "our", "should",
    "so", "some", "than", "that", "the", "their", "them", "then", "there", "these", "they",
    "this", "those", "to", "us", "use", "used", "using", "want", "was", "way", "ways", "we",
    "were", "what", "when", "where", "whether", "which", "while", "who", "why", "will", "with",
    "would", "you", "your",
))
# fmt: on

# CJK scripts written without spaces: Hiragana, Katakana, CJK ideographs (+ extension A and
# compatibility), Hangul syllables, half-width Katakana: a character class's body, for the
# modules that look for these scripts (snippets, quotes, tsquery).
CJK = "\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f"
_CJK_RUN = re.compile(f"[{CJK}]+")
# An identifier with a capital inside it: getUserMedia, onMessage, XMLHttpRequest (tf.Tensor
# is not: no lower-case letter before the capital inside one word).
_CAMEL = re.compile(r"[A-Za-z][a-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*")
# Each ASCII character's class for camel_words: "a" a small letter or digit, "A" a capital,
# " " anything else (every other character, non-ASCII ones too, ends an identifier). The scan
# then runs on bytes with find/rfind in C: a regex or a Python step per character cost more
# than the rest of an import's text preparation together.
_CLASSES = bytes(
    ord("a") if chr(c).isascii() and (chr(c).islower() or chr(c).isdigit())
    else ord("A") if chr(c).isascii() and chr(c).isupper()
    else ord(" ")
    for c in range(256)
)  # fmt: skip
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# `@name` written in a page, not inside a word or an address (`user@example.com`): a CSS
# at-rule (`@font-face`), a decorator (`@tf.function` gives `tf`), a package scope. The `@`
# first, the character before it checked after: a pattern that starts with a literal is
# scanned for it at C speed, where a leading lookbehind ran at every position (18x slower on
# the corpus's pages with an `@`, the same matches).
_AT_NAME = re.compile(r"@(?<![\w@.]@)([A-Za-z][A-Za-z0-9-]*)")
# A query word that is one `@name` (quotes or brackets around it are dropped).
_AT_QUERY = re.compile(r"@([A-Za-z][A-Za-z0-9-]*)")
_AT_WRAPPING = "`'\"()[]{},;:!?."
# The side column's word for `@name`: this prefix and the name's letters and digits, one
# token for every analyzer (which would split `font-face` and drop the `@`). The side column
# holds only camelCase parts and CJK bigrams besides, none of which starts so.
AT_PREFIX = "zzat"
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]+")


def camel_words(text: str) -> list[str]:
    """The camelCase identifiers in `text`, each once, in order: the runs of ASCII letters and
    digits that start with a letter and have a capital right after a small letter or digit."""
    # One byte per character ("?" for a non-ASCII one), so indexes match `text`'s.
    classes = text.encode("ascii", "replace").translate(_CLASSES)
    found: dict[str, None] = {}
    at = classes.find(b"aA")
    while at >= 0:
        start = classes.rfind(b" ", 0, at) + 1
        end = classes.find(b" ", at)
        if end < 0:
            end = len(classes)
        if text[start].isalpha():
            found[text[start:end]] = None
        at = classes.find(b"aA", end)
    return list(found)


@functools.lru_cache(maxsize=1 << 16)
def _joined_parts(word: str) -> str:
    # Identifiers repeat across pages (an API's names): each is split once per process.
    return " ".join(camel_parts(word))


def camel_parts(word: str) -> list[str]:
    """The parts of a camelCase identifier, lower-cased (`getUserMedia` -> get, user, media)."""
    return [p.lower() for p in _CAMEL_PART.findall(word)]


def at_marker(name: str) -> str:
    """The side column's one word for `@name` (`font-face` -> `zzatfontface`)."""
    return AT_PREFIX + "".join(c for c in name.lower() if c.isalnum())


def _marker_of(found: re.Match[str]) -> str:
    # `@font-face-` (a name cut at a line's end) is `@font-face`.
    return at_marker(found.group(1).rstrip("-"))


def at_markers(*texts: str | None) -> str:
    """A marker word for every `@name` written in the texts, once per occurrence (how often
    a page writes `@scope` is what ranks the page about it first); empty for most pages.
    SQLite's side column holds them."""
    return " ".join(
        _marker_of(found)
        for text in texts
        if text and "@" in text
        for found in _AT_NAME.finditer(text)
    )


def with_at_markers(text: str | None) -> str:
    """`text` with each `@name` it writes preceded by its marker word (`@scope (.card)` ->
    `zzatscope @scope (.card)`): the same markers as `at_markers`, where the name is, for
    PostgreSQL's tsvectors (a query's `@scope` is then the phrase `zzatscope scope`)."""
    if not text or "@" not in text:
        return text or ""
    return _AT_NAME.sub(lambda found: f"{_marker_of(found)} {found.group(0)}", text)


def cjk_bigrams(run: str) -> list[str]:
    """Overlapping bigrams of a run of CJK characters (a single character stays itself)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def side_text(*texts: str | None) -> str:
    """What the index's side column holds for these texts: the parts of camelCase identifiers
    in their code (or anywhere in a text with no code), each identifier once, and the bigrams
    of CJK runs, in order; empty for plain prose."""
    parts: list[str] = []
    seen: set[str] = set()
    for text in texts:
        if not text:
            continue
        # Identifiers live in code: inline `code` and fenced blocks, the odd pieces between
        # backticks (scanning only those keeps the side column cheap to build).
        code = " ".join(text.split("`")[1::2]) if "`" in text else text
        for word in camel_words(code):
            if word not in seen:
                seen.add(word)
                parts.append(_joined_parts(word))
        if not text.isascii():
            for run in _CJK_RUN.findall(text):
                parts.append(" ".join(cjk_bigrams(run)))
    return "\n".join(parts)


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class Term:
    """One query term: an FTS5 expression (a quoted word or phrase, or a CJK bigram phrase),
    and the single words it falls back to when pages with the whole term are too few."""

    text: str
    expr: str
    parts: tuple[str, ...]
    # The same term for an engine that builds queries as objects: the non-CJK words (one
    # phrase), and each CJK run's bigrams (one phrase each; a lone character stands for the
    # bigrams that start with it).
    plain: tuple[str, ...] = ()
    grams: tuple[tuple[str, ...], ...] = ()
    # Written `@name` (an at-rule): its marker word, which the page must hold too; else "".
    # SQLite's query adds it (side column); `expr` holds it as the phrase `"marker name"`
    # (PostgreSQL's index writes it before the name). Its words alone are its fallback.
    at: str = ""


def _is_word_char(char: str) -> bool:
    # Letters, digits and combining marks (Devanagari vowel signs, decomposed accents), which
    # FTS5's unicode61 keeps inside tokens; `_` splits tokens there but joins a phrase here.
    return char.isalnum() or char == "_" or unicodedata.category(char)[0] == "M"


def _words(token: str) -> list[str]:
    if token.isascii():
        return _ASCII_WORD.findall(token)
    words: list[str] = []
    current: list[str] = []
    for char in (*token, " "):
        if _is_word_char(char):
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    return words


def _term(words: list[str], at: str = "") -> Term:
    """A Term from the words of one whitespace-separated token of the query (`at`: the
    marker of the `@name` it is, if it is one)."""
    text = " ".join(words)
    pieces: list[str] = []  # FTS5 strings and prefix queries, ANDed
    parts: list[str] = []
    plain: list[str] = []  # consecutive non-CJK words, one phrase
    phrases: list[tuple[str, ...]] = []
    for word in words:
        runs = _CJK_RUN.findall(word) if not word.isascii() else []
        rest = _CJK_RUN.sub(" ", word).split() if runs else [word]
        plain.extend(rest)
        for run in runs:
            grams = cjk_bigrams(run)
            # One character: the bigrams that start with it (FTS5 prefix query).
            pieces.append(_quote(run) + "*" if len(run) == 1 else _quote(" ".join(grams)))
            phrases.append(tuple(grams))
            parts.extend(grams)
        parts.extend(rest)
        if len(rest) == 1 and _CAMEL.fullmatch(rest[0]):
            parts.extend(camel_parts(rest[0]))
    if plain:
        # An `@name`: the marker right before the name (mirror.search.lexical's docstring).
        pieces.insert(0, _quote(" ".join((at, *plain) if at else plain)))
    expr = pieces[0] if len(pieces) == 1 else "(" + " AND ".join(pieces) + ")"
    return Term(
        text, expr, tuple(dict.fromkeys(p for p in parts if p)), tuple(plain), tuple(phrases), at
    )


def query_terms(query: str) -> list[Term]:
    """The terms of a user query: its words, with words joined by punctuation (`tf.function`,
    `chrome.runtime.onMessage`) kept together as one phrase, Korean and Japanese words as
    mirror.search.cjk_words cuts them; deduplicated, stopwords dropped if others remain."""
    text = unicodedata.normalize("NFC", query[:MAX_QUERY_CHARS])
    seen: dict[str, tuple[list[str], str]] = {}
    for token in text.split():
        for piece in cjk_words.query_words(token):
            words = [w[:MAX_TERM_CHARS] for w in _words(piece)]
            at = _AT_QUERY.fullmatch(piece.strip(_AT_WRAPPING))
            marker = at_marker(at.group(1).rstrip("-")) if at else ""
            if words:
                key = " ".join(words).casefold()
                seen.setdefault("@" + key if marker else key, (words, marker))
    terms = list(seen.items())
    content = [t for key, t in terms if key not in STOPWORDS]
    return [_term(words, at) for words, at in (content or [t for _, t in terms])[:MAX_TERMS]]


def names_code(query: str) -> bool:
    """Whether every term of `query` is a code identifier: words joined by punctuation
    (`chrome.tts.speak`, `from_tensor_slices`) or a camelCase word (`showPicker`)."""
    terms = query_terms(query)
    return bool(terms) and all(
        (" " in t.text.strip() and not _CJK_RUN.search(t.text)) or _CAMEL.fullmatch(t.text)
        for t in terms
    )


def all_of(terms: Sequence[Term]) -> str:
    """An FTS5 query for pages with every term. An identifier of several words
    (`navigator.wakeLock.request`) must appear whole, and is ranked by its parts too: BM25
    scores every phrase of the expression, so of the pages that name the call, the one whose
    title, headings or code identifiers hold its parts ("Wake Lock" in the title, `wakeLock`
    throughout) ranks above a short release note that names it once. Parts count in those
    columns only (in the body they favour any long page about the words); `OR whole` keeps
    the matching pages exactly those that hold the identifier."""
    return " AND ".join(_whole_and_parts(t) for t in terms)


def _whole_and_parts(term: Term) -> str:
    if " " not in term.text or _CJK_RUN.search(term.text) or term.at:
        # One word (a camelCase one is specific enough whole: `RenderingNG` ranked by its
        # parts favours every page about rendering); CJK bigrams are the term's phrase.
        return term.expr
    parts = " OR ".join(_quote(p) for p in term.parts)
    return f"({term.expr} AND ({{title headings side}} : ({parts}) OR {term.expr}))"


def any_of(terms: Sequence[Term]) -> str:
    """An FTS5 query for pages with any term, or any part of one (a word of an identifier)."""
    return " OR ".join(alternatives(terms))


def alternatives(terms: Sequence[Term]) -> list[str]:
    """The FTS5 expressions `any_of` joins: each term, then each fallback word, once."""
    exprs = [t.expr for t in terms]
    exprs += [_quote(p) for p in fallback_words(terms)]
    return list(dict.fromkeys(exprs))


def fallback_words(terms: Sequence[Term]) -> list[str]:
    """The single words a match of any term adds after the terms themselves (both backends):
    the parts of an identifier, and the name of an `@name` alone, so pages with the word
    follow the pages that write the at-rule (and find something when none does)."""
    return list(dict.fromkeys(p for t in terms if len(t.parts) > 1 or t.at for p in t.parts))


def words_of(terms: Iterable[Term]) -> list[str]:
    """Every single word of the terms (what a typo correction looks at)."""
    return list(dict.fromkeys(p for t in terms for p in (t.parts or (t.text,))))


def replace_word(terms: Sequence[Term], word: str, better: str) -> list[Term]:
    """The terms with `word` spelled `better` (a typo corrected from the index's vocabulary)."""
    return [
        _term([better if w.casefold() == word.casefold() else w for w in t.text.split()])
        if word in t.text.split()
        else t
        for t in terms
    ]


def edit_distance(a: str, b: str, limit: int) -> int:
    """Damerau-Levenshtein distance (adjacent swaps count 1), or limit + 1 when larger."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = ca != cb
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def closest(stemmed: str, vocabulary: Iterable[tuple[str, int]]) -> str | None:
    """The vocabulary term nearest to the stem of a word that matches nothing, for typo
    correction: 1 edit apart (2 for stems of 6 letters or more), the most frequent (the
    terms' document counts) among the nearest."""
    limit = 1 if len(stemmed) < 6 else 2
    best: tuple[int, int, str] | None = None
    for term, docs in vocabulary:
        if abs(len(term) - len(stemmed)) > limit:
            continue  # the distance's first test, without a call per term
        distance = edit_distance(stemmed, term, limit)
        if distance <= limit and (best is None or (distance, -docs) < best[:2]):
            best = (distance, -docs, term)
    return best[2] if best is not None else None


# Endings dropped before counting a query word in a chunk, longest first ("caching" and
# "caches" both count as "cach"): a light stand-in for the index's Porter stemmer, enough to
# choose among one page's chunks.
_ENDINGS = ("ations", "ation", "ings", "ing", "ies", "es", "ed", "s", "ly")


def stem_key(word: str) -> str:
    """A word folded and stripped of common English endings (for counting and marking)."""
    word = word.casefold()
    if len(word) > 4 and word.isascii():
        for ending in _ENDINGS:
            if word.endswith(ending) and len(word) - len(ending) >= 3:
                return word[: -len(ending)]
    return word


def chunk_scores(chunks: Sequence[tuple[str, str]], terms: Sequence[Term]) -> list[float]:
    """How well each (heading, text) chunk of one page matches the terms: each word's
    occurrences, log-damped, weighted by how few of the page's chunks have it, twice in the
    heading. Substring counts, so stems, plurals and CJK words need no tokenizer."""
    keys = list(dict.fromkeys(stem_key(p) for t in terms for p in (t.parts or (t.text,))))
    lowered = [(heading.casefold(), text.casefold()) for heading, text in chunks]
    scores = [0.0] * len(chunks)
    for key in keys:
        counts = [text.count(key) + 2 * heading.count(key) for heading, text in lowered]
        having = sum(1 for c in counts if c)
        if not having:
            continue
        weight = math.log(1 + len(chunks) / having)
        for i, count in enumerate(counts):
            if count:
                scores[i] += weight * (1 + math.log(count))
    return scores


def best_chunks(
    contents: Sequence[str], query: str, per_document: int = PER_DOCUMENT
) -> list[list[Chunk]]:
    """For each document's Markdown, its best chunks for `query` (at most `per_document`, the
    best first; the first chunk when none has a query word, e.g. a match in the title only)."""
    terms = query_terms(query)
    picked: list[list[Chunk]] = []
    for content in contents:
        chunks = recent_chunks(content)
        if len(chunks) <= 1 or not terms:
            picked.append(list(chunks[:1]))
            continue
        scores = chunk_scores([(c.heading, c.text) for c in chunks], terms)
        order = sorted(range(len(chunks)), key=lambda i: (-scores[i], i))
        best = scores[order[0]]
        keep = [
            i for i in order[:per_document] if i == order[0] or 0 < best * SECOND_CHUNK <= scores[i]
        ]
        picked.append([chunks[i] for i in keep])
    return picked
