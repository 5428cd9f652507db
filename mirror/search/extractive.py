"""Offline answers assembled from local search hits: sentences quoted, never generated.

Pure functions: no store, no network. The answer is labelled as extractive in its text, so an
agent reading only `answerText` (e.g. over MCP) is not misled into taking it for Gemini's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Answer, Citation, Document, DocumentChunk
from . import quotes
from .snippets import link_labels, plain_text

LABEL = "Extractive answer (offline: quoted from the local mirror, not generated):"
# How many pages an answer quotes: the first-ranked one, then supporting quotes.
MAX_SOURCES = 3


@dataclass(frozen=True, slots=True)
class Passage:
    """A local search hit to quote from."""

    name: str
    text: str
    document: Document | None


def build(query: str, passages: Sequence[Passage]) -> Answer:
    """An Answer that leads with the best passage of the page ranked first (`passages` come in
    the search's order, each page's best chunks first), then quotes up to MAX_SOURCES - 1
    further pages that hold a word of the question, each cited once, with byte offsets.

    The lead is the first page with prose to quote (or else a description), even when none of
    its sentences holds a word of the question (a page ranked first by meaning, or by its
    title): search chose it, and its opening says what it is about. A supporting quote must
    hold a question word.
    """
    text = LABEL
    citations: list[Citation] = []
    references: list[DocumentChunk] = []
    by_document: dict[str, list[Passage]] = {}
    for passage in passages:
        by_document.setdefault(passage.name, []).append(passage)
    for name, group in by_document.items():
        if len(citations) >= MAX_SOURCES:
            break
        document = group[0].document
        # A shortcut reference link (`[long tasks]`) is defined elsewhere on the page.
        labels = link_labels(document.content or "") if document else frozenset()
        quote = quotes.best([p.text for p in group], query, labels)
        source = _holding(group, quote.text, labels) if quote else ""
        if quote is None and not citations and document and document.description:
            # A landing page (a title and a list of links, 7% of the corpus' pages) has no
            # prose: its description is its own summary of what it holds.
            quote = quotes.Quote(plain_text(document.description), 0.0)
            source = document.description
        if quote is None or not quote.text or (citations and not quote.score):
            continue
        index = len(references)
        references.append(
            DocumentChunk(
                parent=name,
                id=None,
                content=source,
                document=document.basic() if document else None,
            )
        )
        text += "\n"
        begin = len(text.encode("utf-8"))
        text += quote.text
        citations.append(Citation(begin, len(text.encode("utf-8")), (index,)))
        text += f" [{index + 1}]"
    if not citations:
        text += "\nNothing in the local mirror matches this question."
    return Answer(text, tuple(citations), tuple(references))


def _holding(group: Sequence[Passage], quoted: str, labels: frozenset[str]) -> str:
    """The chunk a quotation came from (its reference's content): the first of the page's
    passages that holds the quotation's first words, else its best passage."""
    opening = " ".join(quoted.split()[:4])
    for passage in group:
        if opening in " ".join(plain_text(passage.text, labels).split()):
            return passage.text
    return group[0].text
