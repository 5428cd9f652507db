"""What the search index holds for a page (text_index.py): its fields, how their text is cut
into words, and the entry derived from a stored page."""

from __future__ import annotations

from dataclasses import dataclass

import tantivy

from ....search import lexical
from ....search.chunking import headings

# Changing the fields or the analyzer: bump text_index.VERSION (indexes are then rebuilt).
FIELDS = ("title", "description", "headings", "body", "side")
ANALYZER = "dk_text"


def analyzer() -> tantivy.TextAnalyzer:
    """Words cut at anything not a letter or digit, lower-cased, accents folded, English
    words stemmed (Snowball): the same for pages and queries."""
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(64))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    # The resource name, whole: what a search returns and what a change deletes by.
    builder.add_text_field("name", stored=True, tokenizer_name="raw", index_option="basic")
    for field in FIELDS:
        builder.add_text_field(field, tokenizer_name=ANALYZER, index_option="position")
    return builder.build()


@dataclass(frozen=True, slots=True)
class Entry:
    """What the index holds for one page (mirror.store.textindex.sqlite.engine derives it)."""

    name: str
    title: str | None
    description: str | None
    headings: str
    body: str
    side: str

    def document(self) -> tantivy.Document:
        return tantivy.Document(
            name=self.name,
            title=self.title or "",
            description=self.description or "",
            headings=self.headings,
            body=self.body,
            side=self.side,
        )


def entry_of(name: str, title: str | None, description: str | None, content: str) -> Entry:
    """The index entry of a page with content (pure: may run ahead, in another thread)."""
    side = lexical.side_text(title, content)
    # `@scope` and the like as one word each (mirror.search.lexical says why and where
    # PostgreSQL puts them).
    markers = lexical.at_markers(title, content)
    if markers:
        side = f"{side}\n{markers}" if side else markers
    return Entry(name, title, description, headings(content), content, side)
