"""What every local search engine returns, and the step they share: documents ranked, then each
shown with its best chunks (the tantivy index on SQLite, text_search.py; tsvector on
PostgreSQL, pg_search.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ...search import lexical

# Queries of this many terms or more rank pages with any term from the start: pages with
# every word of a long question are few and often only mention each in passing.
LONG_QUERY = 4
# The least score a match gets: BM25 is near 0 for a word in most pages of a small store, and
# a hit with relevanceScore 0 would read as "not relevant" (upstream's are in (0, 1]).
MIN_SCORE = 1e-6


@dataclass(frozen=True, slots=True)
class LocalHit:
    """One chunk found by local search, with its score in [0, 1] (higher is better).

    No snippet: the shells ask for a page's snippets (Mirror.snippets, cut from the text shown)
    once it is known, the same way for local, recorded and upstream results.
    """

    name: str
    chunk_id: str
    heading: str
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class DocumentHit:
    """One document in the lexical ranking: its name, rank (lower is better) and score."""

    name: str
    rank: float
    score: float


def grouped(
    documents: Sequence[DocumentHit],
    query: str,
    need: int,
    contents: Callable[[list[str]], dict[str, str | None]],
) -> list[LocalHit]:
    """The first `need` chunks of a document ranking, grouped by document: each followed by
    its best chunks (lexical.best_chunks). `contents` reads the Markdown of some names (each
    backend its own way); a name without content is skipped."""
    hits: list[LocalHit] = []
    done = 0
    while len(hits) < need and done < len(documents):
        # A few documents at a time: most pages are filled by the first few.
        group = documents[done : done + max(2, (need - len(hits) + 1) // 2)]
        done += len(group)
        found = contents([d.name for d in group])
        shown = [d for d in group if found.get(d.name)]
        chunks = lexical.best_chunks([found[d.name] or "" for d in shown], query)
        for doc, best in zip(shown, chunks, strict=True):
            hits.extend(LocalHit(doc.name, c.id, c.heading, c.text, doc.score) for c in best)
    return hits
