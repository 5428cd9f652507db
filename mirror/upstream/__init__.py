"""Clients for the upstream Developer Knowledge API (REST v1 and MCP), behind one interface.

The only package that imports httpx, and tenacity (but for the store's one retry of a write
PostgreSQL rolled back: store/db/turns.py). Importing this package is cheap: the
transports are loaded by `open_upstream`, so offline paths never import httpx.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ..limits import MAX_NAMES
from ..models import Answer, Document, SearchPage, View

if TYPE_CHECKING:
    import httpx

    from ..config import Settings
    from .pacing import Pacing
    from .retry import RetryPolicy
    from .stats import UpstreamStats

# BatchGetDocuments accepts at most this many names per call (limits.py holds the API's limits).
MAX_BATCH = MAX_NAMES


class Upstream(Protocol):
    """What the service needs from an upstream, whatever the transport."""

    label: str  # where documents come from, e.g. "rest https://developerknowledge.googleapis.com"

    @property
    def stats(self) -> UpstreamStats:
        """Calls, retries, 429s and seconds spent waiting for quota so far."""
        ...

    def batch_get(self, names: Sequence[str], view: View = View.CONTENT) -> list[Document]:
        """Documents for at most 20 canonical names, in request order; NotFound if any is absent."""
        ...

    def search_chunks(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
    ) -> SearchPage:
        """One page of SearchDocumentChunks (MCP: query only; paging and filter need REST)."""
        ...

    def answer_query(self, query: str, *, filter: str | None = None) -> Answer:
        """A grounded answer (REST: with citations and chunk references; MCP: reference names)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def open_upstream(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    retry: RetryPolicy | None = None,
    pacers: Mapping[str, Pacing] | None = None,
) -> Upstream:
    """The upstream client `settings` ask for (REST or MCP), paced and retrying.

    `pacers`: the quota buckets by name ("get", "search"), e.g. shared through the store;
    by default each is a bucket in this process's memory.
    """
    from .factory import build

    return build(settings, transport=transport, retry=retry, pacers=pacers)
