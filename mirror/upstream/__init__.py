"""Clients for the upstream Developer Knowledge API (REST v1 and MCP), behind one interface.

The only package that imports httpx and tenacity. Importing this package is cheap: the
transports are loaded by `open_upstream`, so offline paths never import httpx.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..limits import MAX_NAMES
from ..models import Answer, Document, SearchPage, View

if TYPE_CHECKING:
    import httpx

    from ..config import Settings
    from .activity import Activity
    from .retry import RetryPolicy

# BatchGetDocuments accepts at most this many names per call (limits.py holds the API's limits).
MAX_BATCH = MAX_NAMES


class Upstream(Protocol):
    """What the service needs from an upstream, whatever the transport."""

    label: str  # where documents come from, e.g. "rest https://developerknowledge.googleapis.com"
    activity: Activity  # attempts, retries and quota waits so far (progress displays)

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
) -> Upstream:
    """The upstream client `settings` ask for (REST or MCP), paced and retrying."""
    from .factory import build

    return build(settings, transport=transport, retry=retry)
