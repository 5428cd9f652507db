"""Which pages the index must take again: those whose stored copy differs in what the index
holds (title, description, content), shared by every engine."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...models import Document, content_sha256


def last_copies(docs: Iterable[Document]) -> list[Document]:
    """`docs` with one copy of each name, the last one (as the upsert keeps)."""
    return list({doc.name: doc for doc in docs}.values())


def differing(
    docs: list[Document], stored: Mapping[str, tuple[Any, ...]], hashes: Mapping[str, str | None]
) -> list[Document]:
    """The `docs` whose (title, description, content hash) differs from `stored`'s, or that
    are not stored. `hashes`: content hashes by name, where already computed."""

    def sha(doc: Document) -> str | None:
        if doc.name in hashes:
            return hashes[doc.name]
        return content_sha256(doc.content) if doc.content is not None else None

    # Re-putting unchanged pages (refresh, re-import) then skips the index writes.
    return [
        doc
        for doc in docs
        if (found := stored.get(doc.name)) is None
        or found != (doc.title, doc.description, sha(doc))
    ]
