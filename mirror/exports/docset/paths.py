"""Where a document's page sits inside a docset, and the relative links between pages.

Page paths are export-md's (mirror/snapshots/mdpaths.py: safe on every file system, never
outside the folder), with `.html` for `.md`; a link is that path relative to the linking page,
percent-encoded, since a file name may hold a literal `%`.
"""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath
from urllib.parse import quote

from ...snapshots.mdpaths import relative_path

DOCUMENTS = PurePosixPath("Contents/Resources/Documents")
STYLE = PurePosixPath("style.css")
INDEX = PurePosixPath("index.html")


def page_path(name: str) -> PurePosixPath:
    """The page of document `name`, relative to the docset's Documents folder."""
    return relative_path(name).with_suffix(".html")


def entry_path(target: PurePosixPath, fragment: str = "") -> str:
    """A search index entry's path: relative to Documents and percent-encoded, as Dash and
    Zeal read it (a URL path: Zeal decodes `%XX`, so a literal `%` must be `%25`)."""
    return quote(str(target), safe="/-._~") + (f"#{fragment}" if fragment else "")


def href(source: PurePosixPath, target: PurePosixPath, fragment: str = "") -> str:
    """A link from page `source` to file `target` (both relative to Documents), as an href."""
    rel = posixpath.relpath(str(target), str(source.parent))
    return quote(rel, safe="/-._~") + (f"#{fragment}" if fragment else "")
