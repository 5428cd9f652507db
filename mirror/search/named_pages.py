"""Pages named after the identifier a query is: pure, no I/O.

A query that is one API name (`NavigateEvent.intercept()`, `showPicker`, `workbox-window`)
is navigational: its reader wants the page about it, and docs sites name such a page after it
(blog/navigateevent-intercept, blog/show-picker, modules/workbox-window). Word counts alone can
rank a long guide that names the call ten times above the post about it that names it twice.
The last part of a page's resource name, letters and digits only and case folded, equal to the
query's is that signal. Over the identifier queries of tests/data/relevance.json and the dev
half of bench/data/questions.json (32), it matched a page for 5, and each time an expected
page: never one that merely mentions the name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

Hit = TypeVar("Hit")

_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
# A call's empty parentheses are how the name is written, not part of it.
_CALL = re.compile(r"\(\)\s*$")


def key(text: str) -> str:
    """`text` as a page name's last part is compared: letters and digits, case folded."""
    return _NOT_ALNUM.sub("", _CALL.sub("", text.strip()).casefold())


def named_first(query: str, ranking: Sequence[Hit], name: Callable[[Hit], str]) -> list[Hit]:
    """`ranking` with the pages whose resource name ends in the identifier `query` (see
    `key`) moved ahead of the rest, each group in its own order. Only pages already in the
    ranking move: one that holds none of the query's words is not about it. The caller says
    whether `query` is an identifier (mirror.search.lexical.names_code)."""
    wanted = key(query)
    if not wanted:
        return list(ranking)
    named = [hit for hit in ranking if key(name(hit).rstrip("/").rpartition("/")[2]) == wanted]
    if not named:
        return list(ranking)
    chosen = {id(hit) for hit in named}
    return [*named, *(hit for hit in ranking if id(hit) not in chosen)]
