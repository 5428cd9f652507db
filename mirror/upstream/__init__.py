"""Clients for the upstream Developer Knowledge API (REST v1 and MCP), behind one interface.

The only package that imports httpx, and tenacity (but for the store's one retry of a write
PostgreSQL rolled back: store/db/turns.py). Importing this package is cheap: the
transports are loaded by `open_upstream`, so offline paths never import httpx.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .interface import MAX_BATCH, Upstream

if TYPE_CHECKING:
    import httpx

    from ..config import Settings
    from .pacing import Pacing
    from .retry import RetryPolicy

__all__ = ["MAX_BATCH", "Upstream", "open_upstream"]


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
