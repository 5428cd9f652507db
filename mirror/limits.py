"""The API's limits and their one validation: every entry point (CLI, REST, MCP, the upstream
clients, requirements files) checks requests here, so each limit has one message.

Source: the upstream contract (reference/developer-knowledge-api.md, sections 2.1 and 4).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .errors import InvalidInput

# BatchGetDocuments (and the MCP get_documents tool) takes at most this many names.
MAX_NAMES = 20
# A query, a filter and a resource name are each at most this many characters.
MAX_TEXT = 500
# A lone surrogate: what Python makes of bytes that are not UTF-8 in a command's arguments
# (PEP 383), or what a JSON body's escape `\udce9` decodes to. It is no character: the
# model's tokenizer raises on it, and no page holds it.
_NOT_TEXT = re.compile("[\ud800-\udfff]")
# SearchDocumentChunks returns at most this many results per page; larger sizes are coerced.
MAX_PAGE_SIZE = 100
# Upstream's page size when none is given ("at most 5").
DEFAULT_PAGE_SIZE = 5


def check_names(names: Sequence[str]) -> None:
    """Refuse an empty list or more than 20 names, as batchGet does."""
    if not names:
        raise InvalidInput("no document names given", hint="name at least one document")
    if len(names) > MAX_NAMES:
        raise InvalidInput(
            f"{len(names)} names given; get_documents takes at most {MAX_NAMES}",
            hint="use `dk-mirror fetch` (any number of names) and then get them in twenties",
        )


def check_query(query: str | None, *, what: str = "query") -> str:
    """The query stripped; empty or over 500 characters is refused as upstream refuses it,
    and one that is not text (_NOT_TEXT) as upstream cannot even receive it."""
    text = (query or "").strip()
    if not text:
        raise InvalidInput(
            f"the {what} is empty; the API refuses an empty one (INVALID_ARGUMENT)",
            hint="give a few words",
        )
    if len(text) > MAX_TEXT:
        raise InvalidInput(
            f"the {what} is {len(text)} characters; the API refuses more than {MAX_TEXT} "
            "(INVALID_ARGUMENT)",
            hint="shorten it to its key words",
        )
    broken = _NOT_TEXT.search(text)
    if broken:
        raise InvalidInput(
            f"the {what} is not valid UTF-8 text (a byte that is not UTF-8 at character "
            f"{broken.start() + 1})",
            hint="type it again, in a terminal whose encoding is UTF-8 (e.g. LANG=C.UTF-8)",
        )
    return text


def check_filter_length(text: str | None) -> str | None:
    """`text` if it fits the API's filter limit; None when empty (proto3: empty means unset)."""
    if not text:
        return None
    if len(text) > MAX_TEXT:
        raise InvalidInput(
            f"the filter is {len(text)} characters; the API refuses more than {MAX_TEXT} "
            "(INVALID_ARGUMENT)",
            hint="shorten the filter, e.g. by dropping clauses",
        )
    return text


def page_size(size: int | None) -> int:
    """The page size to use: the default when None, refused below 1, cut to 100 above it."""
    if size is None:
        return DEFAULT_PAGE_SIZE
    if size < 1:
        raise InvalidInput(
            f"page size {size} is not allowed", hint=f"give a page size from 1 to {MAX_PAGE_SIZE}"
        )
    # Upstream coerces larger values to the maximum; doing it here keeps requests honest.
    return min(size, MAX_PAGE_SIZE)
