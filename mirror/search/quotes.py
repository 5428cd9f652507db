"""The passage of a page that best answers a question: a few consecutive sentences of prose.

Pure functions, no store. A passage never crosses a paragraph, and headings, code, tables and
template tags are never quoted: a heading read out as if it were a sentence ("Caching model
downloads from TF Hub") names a topic, it does not answer anything.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .language import content_words
from .lexical import CJK, query_terms, stem_key
from .snippets import BULLET, plain_text

# At most this many consecutive sentences, and this many characters, in one quotation.
MAX_SENTENCES = 3
MAX_CHARS = 500
# A quotation shorter than this takes the sentences after it in its paragraph (up to the
# limits above): one short sentence alone rarely says enough to answer.
MIN_CHARS = 160
# A sentence shorter than this is a label or a fragment ("Note:", "Example"), not prose.
MIN_SENTENCE = 20

_FENCE = re.compile(r"^[ \t]*(?:```|~~~)")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}(?:[ \t]|$)")
# A thematic break or a setext heading's underline: both end a paragraph.
_RULE = re.compile(r"^[ \t]*(?:-{3,}|\*{3,}|_{3,}|={3,})[ \t]*$")
_TABLE = re.compile(r"^[ \t]*\|")
# A table's delimiter row (`--- | ---`): its rows may have no leading pipe (51 tables on 25
# pages of the corpus), and run from the header row before it to the next blank line.
_DELIMITER_ROW = re.compile(
    r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)+\|?[ \t]*$"
)
# A definition (`: text`, on the line after its term) is a paragraph of its own.
_DEFINITION = re.compile(r"^[ \t]{0,3}:[ \t]+(?=\S)")
# A list item starts a paragraph of its own: items are separate statements.
_ITEM = re.compile(r"^[ \t]*(?:[*+-]|\d+[.)])[ \t]+")
# Sentence ends: `.`, `!` or `?` before a space and a word that does not start in lower case
# (so "e.g. a cache" stays whole), or a CJK full stop, which needs no space after it.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\sa-z])|(?<=[\u3002\uff01\uff1f])\s*")
_CJK = re.compile(f"[{CJK}]")


@dataclass(frozen=True, slots=True)
class Quote:
    """A passage to quote: its plain text and how well it covers the question (0: no word)."""

    text: str
    score: float


def paragraphs(markdown: str, labels: frozenset[str] = frozenset()) -> list[str]:
    """A chunk's prose paragraphs as plain text: no headings, fenced code, tables, rules or
    definition list terms (lines of HTML and template tags are reduced by plain_text, and
    vanish when that is all they held). `labels`: the link labels its page defines
    (snippets.link_labels)."""
    out: list[str] = []
    lines: list[str] = []
    fenced = tabled = False

    def close() -> None:
        text = plain_text("\n".join(lines), labels).removeprefix(BULLET)
        if text:
            out.append(text)
        lines.clear()

    for line in markdown.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            close()
        elif fenced:
            continue
        elif _DELIMITER_ROW.match(line):
            if lines:
                lines.pop()  # the table's header row
            close()
            tabled = True
        elif tabled and line.strip():
            continue
        elif not line.strip() or _HEADING.match(line) or _RULE.match(line) or _TABLE.match(line):
            close()
            tabled = False
        elif not plain_text(line):
            # Only tags (`</td>`, `<br/><div ...>`) or a template tag: in the corpus' HTML
            # tables and figures each such line ends a cell or a block.
            close()
        elif _DEFINITION.match(line):
            # Its term, the line before, names a topic as a heading does: it is not quoted.
            if lines:
                lines.pop()
            close()
            lines.append(_DEFINITION.sub("", line, count=1))
        else:
            if _ITEM.match(line):
                close()
            lines.append(line)
    close()
    return out


def sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph of plain text."""
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def _is_prose(sentence: str) -> bool:
    # Code that escaped its fence (indented blocks, code inside HTML) is mostly punctuation.
    letters = sum(1 for c in sentence if c.isalpha() or c.isspace())
    return MIN_SENTENCE <= len(sentence) <= MAX_CHARS and letters >= 0.75 * len(sentence)


def question_keys(question: str) -> list[str]:
    """The keys a question's words are found by: stem keys of its terms, stop words out,
    CJK words as bigrams (lexical.query_terms, as the chunk scorer counts them)."""
    # An other-language question's function words ("con", "un") are no more a sign of the
    # answer than English stop words are: they are in every sentence of its language.
    terms = query_terms(content_words(question))
    return list(dict.fromkeys(stem_key(p) for t in terms for p in (t.parts or (t.text,))))


def _finder(key: str) -> re.Pattern[str]:
    # A key is a word's start ("cach" finds "caching"), except in scripts written without
    # spaces, where a bigram may sit anywhere in a run of characters.
    if _CJK.search(key):
        return re.compile(re.escape(key))
    return re.compile(r"(?<!\w)" + re.escape(key))


def best(
    passages: Sequence[str], question: str, labels: frozenset[str] = frozenset()
) -> Quote | None:
    """The best quotation for `question` among the Markdown `passages` (chunks of one page):
    the prose sentence whose question words, each weighted by how few of the page's sentences
    hold it, weigh most (on a tie the one holding them more often, then the earlier), with the
    sentences after it in its paragraph while the quotation is short (MIN_CHARS). With no
    question word anywhere, the page's first prose sentences (score 0). None when the
    passages hold no prose at all. `labels`: the link labels the page defines
    (snippets.link_labels): a shortcut reference to one is quoted as its text."""
    units = [
        [s for s in sentences(p) if _is_prose(s)]
        for text in passages
        for p in paragraphs(text, labels)
    ]
    units = [u for u in units if u]
    if not units:
        return None
    finders = [_finder(k) for k in question_keys(question)]
    # For each sentence, how often it holds each question key.
    counts = [[[len(f.findall(s.casefold())) for f in finders] for s in unit] for unit in units]
    total = sum(len(u) for u in units)
    having = [sum(1 for u in counts for c in u if c[i]) for i in range(len(finders))]
    weight = [math.log(1 + total / n) if n else 0.0 for n in having]
    # The best sentence so far: its rank (larger is better: one that does not end in a colon,
    # the weight of the keys it holds, then how many times it holds them, then the earlier)
    # and where it is. A sentence ending in a colon introduces what is not quoted (code, a
    # list: "run the following command:"), so it leads a quotation only when no other
    # sentence holds a question word; with none, the first that does not end so opens it.
    rank: tuple[bool, float, int, int, int] = (False, 0.0, 0, 0, 0)
    u, start = _opening(units)
    for here, paragraph in enumerate(counts):
        for first, held in enumerate(paragraph):
            score = sum(w for w, c in zip(weight, held, strict=True) if c)
            whole = not units[here][first].endswith(":")
            candidate = (whole, score, sum(held), -here, -first)
            if score > 0 and candidate > rank:
                rank, u, start = candidate, here, first
    unit = units[u]
    chosen = [unit[start]]
    # Too short to say much: the sentences after it in its paragraph, while they fit.
    end = start + 1
    while len(" ".join(chosen)) < MIN_CHARS and len(chosen) < MAX_SENTENCES and end < len(unit):
        # A sentence ending in a colon introduces what is not quoted (code, a list): it would
        # leave the quotation hanging.
        if len(" ".join([*chosen, unit[end]])) > MAX_CHARS or unit[end].endswith(":"):
            break
        chosen.append(unit[end])
        end += 1
    return Quote(" ".join(chosen), rank[1])


def _opening(units: Sequence[Sequence[str]]) -> tuple[int, int]:
    """Where the page's first sentence that does not end in a colon is (the first sentence
    when all do): a quotation for a question whose words the page does not hold."""
    for here, unit in enumerate(units):
        for first, sentence in enumerate(unit):
            if not sentence.endswith(":"):
                return here, first
    return 0, 0
