"""The three API calls as a server makes them: the serve mode decides offline, refresh, replay.

MCP tools and REST routes both call these, so the two faces of one server always agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import names as naming
from ..errors import InvalidInput, NotCached, NotThen
from .options import ServeOptions

if TYPE_CHECKING:
    from ..service import GetResult, Mirror
    from ..service.answers import AnswerResult
    from ..service.search import SearchResult

# Suggestions are worked out for at most this many missing names (each costs a listing).
SUGGEST_FOR = 3


class NotServed(NotCached):
    """A miss this server may not fetch: names what is missing, what is close, how to fetch."""

    def __init__(self, names: Sequence[str], options: ServeOptions, hint: str) -> None:
        super().__init__(names, hint=hint)
        shown = ", ".join(self.names[:10]) + (" ..." if len(self.names) > 10 else "")
        self.message = (
            f"{len(self.names)} document(s) not in this mirror's store, and this server does "
            f"not fetch ({options.describe()}): {shown}"
        )
        self.args = (self.message,)


def get_documents(mirror: Mirror, options: ServeOptions, names: Sequence[str]) -> GetResult:
    """Up to 20 documents in request order, fetched only if this server may fetch."""
    if not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise InvalidInput("`names` must be a list of document names")
    try:
        return mirror.get_documents(names, options.request_mode)
    except NotThen:
        raise  # as of a past time: fetching would not help, and the error says why
    except NotCached as exc:
        raise explain_miss(mirror, options, exc.names, names) from None


def search_documents(
    mirror: Mirror,
    options: ServeOptions,
    query: str,
    *,
    page_size: int | None = None,
    page_token: str | None = None,
    filter: str | None = None,
) -> SearchResult:
    """One page of chunks: upstream when fetching (recorded pages first unless live), else local."""
    return mirror.search_documents(
        query,
        page_size=page_size,
        page_token=page_token,
        filter=filter,
        mode=options.request_mode,
    )


def answer_query(
    mirror: Mirror, options: ServeOptions, query: str, *, filter: str | None = None
) -> AnswerResult:
    """A grounded answer: upstream when fetching (recorded first unless live), else local."""
    return mirror.answer_query(query, filter=filter, mode=options.request_mode)


def explain_miss(
    mirror: Mirror, options: ServeOptions, missing: Sequence[str], requested: Sequence[str]
) -> NotServed:
    """The error for documents this server lacks and may not fetch, with the nearest cached."""
    asked = set(naming.normalize_all(requested))
    lines = []
    for name in missing[:SUGGEST_FOR]:
        # Suggesting a name the caller already asked for would only confuse a batch.
        close = mirror.suggest_names(name, limit=3, exclude=sorted(asked))
        lines.append(
            f"nearest cached to {name}: {', '.join(close)}"
            if close
            else f"nothing cached near {name}"
        )
    fetch = "dk-mirror fetch " + " ".join(missing[:3]) + (" ..." if len(missing) > 3 else "")
    restart = "--mode cache-first --allow-fetch" if options.mode == "offline" else "--allow-fetch"
    lines.append(
        f"to mirror the missing document(s), run `{fetch}` where this server's store lives, "
        f"or restart the server with `dk-mirror serve {restart}`"
    )
    return NotServed(missing, options, "; ".join(lines))
