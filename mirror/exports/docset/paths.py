"""Where a document's page sits inside a docset, and the links to it.

Pages sit where the site export puts them (exports/site.py: export-md's safe paths with
`.html`), so both exports link the same way; a search index entry is such a path too.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from ...snapshots.mdpaths import link_target
from ..site import href, page_path

__all__ = ["DOCUMENTS", "INDEX", "STYLE", "entry_path", "href", "page_path"]

DOCUMENTS = PurePosixPath("Contents/Resources/Documents")
STYLE = PurePosixPath("style.css")
INDEX = PurePosixPath("index.html")


def entry_path(target: PurePosixPath, fragment: str = "") -> str:
    """A search index entry's path: relative to Documents and percent-encoded, as Dash and
    Zeal read it (a URL path: Zeal decodes `%XX`, so a literal `%` must be `%25`)."""
    return link_target(target) + (f"#{fragment}" if fragment else "")
