"""Pages with nothing to read, and how far they sink in a ranking: pure, no I/O.

205 of the corpus' 2,774 pages are a title and nothing else: section landings (docs/lighthouse,
docs/privacy-sandbox, docs/crux), event cards, and extension reference pages whose upstream
text is `<!-- Intentionally blank -->`. Their short title matches a product name so well that
"privacy sandbox", "lighthouse", "chrome ux report" and "extension" ranked one first: a result
that opens on an empty page, and an offline answer that skips to the next one.

They are not dropped (a query only they match still finds them): each sinks SINK places, below
the first page of results. The new order sorts by a key fixed per page (its place, plus SINK
when it is blank), so the first N of a ranking SINK deeper than N are the first N of any deeper
one: pages of results never repeat or skip a document (mirror/service/ranking.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

Hit = TypeVar("Hit")

SINK = 10

_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
# Template tags the site's generator left in the Markdown: {% Partial '...' %}, {{ name }}.
_TEMPLATE = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.S)
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.M)


def blank(markdown: str | None) -> bool:
    """Whether `markdown` has no letter or digit outside its headings, HTML comments and
    template tags."""
    if not markdown:
        return True
    text = _HEADING.sub("", _TEMPLATE.sub("", _COMMENT.sub("", markdown)))
    return not any(ch.isalnum() for ch in text)


def sunk(ranking: Sequence[Hit], is_blank: Callable[[Hit], bool], places: int = SINK) -> list[Hit]:
    """`ranking` with each blank page moved `places` places down (past the pages that follow
    it, blank or not); the rest keep their order."""
    keys = [at + places + 0.5 if is_blank(hit) else float(at) for at, hit in enumerate(ranking)]
    order = sorted(range(len(ranking)), key=keys.__getitem__)
    return [ranking[at] for at in order]
