"""`export md`: one Markdown file per page (YAML front matter + the Markdown) and an index.md.

The layout and bytes are those of the former `export-md` (snapshots/mdpaths.py): each page's
front matter carries its original `uri` and its hash.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from ..snapshots import mdpaths
from .base import OutFile, Pages


class MarkdownTree:
    """One run of the md format (it has no options)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        del options
        self.notes: list[str] = []

    def files(self, pages: Pages) -> Iterator[OutFile]:
        """Each page's .md, then index.md."""
        for doc in pages.documents():
            text = mdpaths.front_matter(doc) + (doc.content or "")
            yield OutFile(mdpaths.relative_path(doc.name), text.encode("utf-8"))
        index = mdpaths.index_markdown(
            (e.name, e.title, mdpaths.relative_path(e.name)) for e in pages.entries
        )
        yield OutFile(PurePosixPath(mdpaths.INDEX), index.encode("utf-8"))


FORMAT = MarkdownTree
