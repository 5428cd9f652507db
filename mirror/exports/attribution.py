"""The licence notice every export carries, and the per-page credit line.

Google's developer documentation is licensed CC BY 4.0, its code samples Apache 2.0 (the
sites' footers say so). CC BY asks for credit, a link to the licence, a link to the original,
and a note that the material was changed; each export says all four once in NOTICE.md, and
each page links to its original address.
"""

from __future__ import annotations

from pathlib import PurePosixPath

NOTICE_PATH = PurePosixPath("NOTICE.md")
CC_BY = "https://creativecommons.org/licenses/by/4.0/"
APACHE = "https://www.apache.org/licenses/LICENSE-2.0"

NOTICE = f"""# Notice

The pages in this folder are Google's developer documentation, as served by Google's
Developer Knowledge API and exported by dk-mirror.

Except as otherwise noted, the content of these pages is licensed under the Creative Commons
Attribution 4.0 License ({CC_BY}), and code samples are licensed under the Apache 2.0 License
({APACHE}). Each page links to its original address, where the current version can be read.

Changes: pages were converted from the Markdown the API serves (to HTML, or re-arranged for
other readers); site template tags, images and embedded widgets are not included.
"""


def credit_line(uri: str | None) -> str:
    """One line for the foot of a Markdown page: where it comes from and its licences."""
    where = f"<{uri}>" if uri else "Google's developer documentation"
    return (
        f"Source: {where}. Content under CC BY 4.0 ({CC_BY}), code samples under "
        f"Apache 2.0 ({APACHE}); see NOTICE.md at the top of this export."
    )
