"""Offline answers assembled from local search hits: sentences quoted, never generated.

Pure functions: no store, no network. The answer is labelled as extractive in its text, so an
agent reading only `answerText` (e.g. over MCP) is not misled into taking it for Gemini's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..models import Answer, Citation, Document, DocumentChunk
from .lexical import STOPWORDS, stem_key
from .snippets import plain_text

LABEL = "Extractive answer (offline: quoted from the local mirror, not generated):"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n{2,}")
_WORD = re.compile(r"\w+", re.UNICODE)
# Markdown noise that makes a poor quotation.
_MARKUP = re.compile(r"^\s*(?:[#>*\-]+|\d+\.)\s*|\{%.*?%\}|!\[[^\]]*\]\([^)]*\)")
MAX_SENTENCES = 3


@dataclass(frozen=True, slots=True)
class Passage:
    """A local search hit to quote from."""

    name: str
    text: str
    document: Document | None


def words(text: str) -> set[str]:
    """The stem keys of a text's words but stop words (a sentence sharing "to" and "the"
    with a question does not answer it)."""
    return {stem_key(w) for w in _WORD.findall(text) if w.lower() not in STOPWORDS}


def _best_sentence(text: str, wanted: set[str]) -> tuple[int, str]:
    best = (0, "")
    for raw in _SENTENCE.split(text):
        stripped = _MARKUP.sub("", raw).strip()
        if stripped.startswith(("```", "|")):
            continue
        sentence = plain_text(stripped)  # no HTML or Markdown left in a quotation
        if not 20 <= len(sentence) <= 400:
            continue
        score = len(words(sentence) & wanted)
        if score > best[0]:
            best = (score, sentence)
    return best


def build(query: str, passages: Sequence[Passage]) -> Answer:
    """An Answer quoting the best-matching sentence of each document, with byte-offset citations.

    Several passages of one document count as one source: each document is quoted and cited
    at most once, from whichever of its passages has the best sentence.
    """
    wanted = words(query)
    text = LABEL
    citations: list[Citation] = []
    references: list[DocumentChunk] = []
    by_document: dict[str, list[Passage]] = {}
    for passage in passages:
        by_document.setdefault(passage.name, []).append(passage)
    for name, group in by_document.items():
        if len(citations) >= MAX_SENTENCES:
            break
        scored = [(_best_sentence(p.text, wanted), i) for i, p in enumerate(group)]
        # Best score first; on a tie the better-ranked (earlier) passage.
        (score, sentence), best = max(scored, key=lambda item: (item[0][0], -item[1]))
        if not score:
            continue
        passage = group[best]
        index = len(references)
        references.append(
            DocumentChunk(
                parent=name,
                id=None,
                content=passage.text,
                document=passage.document.basic() if passage.document else None,
            )
        )
        text += "\n"
        start = len(text.encode("utf-8"))
        text += sentence
        citations.append(Citation(start, len(text.encode("utf-8")), (index,)))
        text += f" [{index + 1}]"
    if not citations:
        text += "\nNothing in the local mirror matches this question."
    return Answer(text, tuple(citations), tuple(references))
