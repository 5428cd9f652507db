"""The interface every upstream client implements (REST and MCP), and the batch size it takes.

Its own module, so the clients and the factory that builds them depend on it without
importing the package that, in turn, opens them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ..limits import MAX_NAMES
from ..models import Answer, Document, SearchPage, View

if TYPE_CHECKING:
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
