"""Offline answers assembled from local search hits: sentences quoted, never generated.

Pure functions: no store, no network. The answer is labelled as extractive in its text, so an
agent reading only `answerText` (e.g. over MCP) is not misled into taking it for Gemini's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Answer, Citation, Document, DocumentChunk
from . import quotes
from .snippets import link_labels, plain_text

LABEL = "Extractive answer (offline: quoted from the local mirror, not generated):"
# How many pages an answer quotes: the first-ranked one, then supporting quotes.
MAX_SOURCES = 3
# The corpus holds pages twice (an extension page for Manifest V2 and its V3 rewrite, an
# article and its blog post), so a supporting quote can say what an earlier one said: 22 of
# bench/data/questions.json's 315 answers repeated one. The same words (one quote within
# the other: "You may provide icons of any other size you wish, ...", then with the sentence
# after it) cite the page as another source of that quote. Nearly the same words are not
# the same statement ("grants host permission" on one page, "grants the tabs permission" on
# its twin; the "Cross-Origin-Embedder-Policy" and "-Opener-Policy" keys' pages), and are
# not quoted again: a quote sharing this much of its words with an earlier one is skipped.
SAME_WORDS = 0.8
_WORD = re.compile(r"\w+")


@dataclass(frozen=True, slots=True)
class Passage:
    """A local search hit to quote from."""

    name: str
    text: str
    document: Document | None


def build(query: str, passages: Sequence[Passage]) -> Answer:
    """An Answer that leads with the best passage of the page ranked first (`passages` come in
    the search's order, each page's best chunks first), then quotes up to MAX_SOURCES - 1
    further pages that hold a word of the question, each cited once, with byte offsets. A
    page whose quote is within an earlier one (or holds it) becomes another source of that
    citation ("... [1][2]"); one whose quote nearly repeats an earlier one (SAME_WORDS) is
    left out. Both make room for the next page's quote.

    The lead is the first page with prose to quote (or else a description), even when none of
    its sentences holds a word of the question (a page ranked first by meaning, or by its
    title): search chose it, and its opening says what it is about. A supporting quote must
    hold a question word.
    """
    quoted: list[tuple[str, frozenset[str], list[int]]] = []  # text, its words, references
    references: list[DocumentChunk] = []
    by_document: dict[str, list[Passage]] = {}
    for passage in passages:
        by_document.setdefault(passage.name, []).append(passage)
    for name, group in by_document.items():
        if len(quoted) >= MAX_SOURCES:
            break
        document = group[0].document
        # A shortcut reference link (`[long tasks]`) is defined elsewhere on the page.
        labels = link_labels(document.content or "") if document else frozenset()
        quote = quotes.best([p.text for p in group], query, labels)
        source = _holding(group, quote.text, labels) if quote else ""
        if quote is None and not quoted and document and document.description:
            # A landing page (a title and a list of links, 7% of the corpus' pages) has no
            # prose: its description is its own summary of what it holds.
            quote = quotes.Quote(plain_text(document.description), 0.0)
            source = document.description
        if quote is None or not quote.text or (quoted and not quote.score):
            continue
        words = _words(quote.text)
        held = [q for q in quoted if _within(quote.text, q[0])]
        if not held and any(_shared(words, q[1]) >= SAME_WORDS for q in quoted):
            continue
        references.append(
            DocumentChunk(
                parent=name,
                id=None,
                content=source,
                document=document.basic() if document else None,
            )
        )
        if held:
            held[0][2].append(len(references) - 1)
        else:
            quoted.append((quote.text, words, [len(references) - 1]))
    text = LABEL
    citations: list[Citation] = []
    for quotation, _, indexes in quoted:
        text += "\n"
        begin = len(text.encode("utf-8"))
        text += quotation
        citations.append(Citation(begin, len(text.encode("utf-8")), tuple(indexes)))
        text += " " + "".join(f"[{i + 1}]" for i in indexes)
    if not citations:
        text += "\nNothing in the local mirror matches this question."
    return Answer(text, tuple(citations), tuple(references))


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def _shared(a: frozenset[str], b: frozenset[str]) -> float:
    """The share of two quotes' words they have in common (Jaccard)."""
    return len(a & b) / len(a | b) if a | b else 1.0


def _within(a: str, b: str) -> bool:
    """Whether one quote's text is within the other's (case and spacing aside)."""
    a, b = (" ".join(_WORD.findall(t.casefold())) for t in (a, b))
    return a in b or b in a


def _holding(group: Sequence[Passage], quoted: str, labels: frozenset[str]) -> str:
    """The chunk a quotation came from (its reference's content): the first of the page's
    passages that holds the quotation's first words, else its best passage."""
    opening = " ".join(quoted.split()[:4])
    for passage in group:
        if opening in " ".join(plain_text(passage.text, labels).split()):
            return passage.text
    return group[0].text
