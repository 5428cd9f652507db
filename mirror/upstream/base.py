"""What the REST and MCP clients share: the client, the key header, pacing, retries, timeouts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import httpx

from ..errors import InvalidInput, ProtocolError
from ..models import Document
from . import MAX_BATCH
from .pacing import Pacer
from .retry import RetryPolicy, call_with_retry

log = logging.getLogger("mirror.upstream")

T = TypeVar("T")

# Connecting should be quick; a large batch of documents may take a while to arrive.
DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=10.0)


class HttpUpstream:
    """Base of the transports: owns the httpx client and runs each call paced and retried."""

    kind = "http"

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        client: httpx.Client,
        pacer: Pacer,
        retry: RetryPolicy | None = None,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = f"{self.kind} {self.base_url}"
        self._key = api_key
        self._client = client
        self._pacer = pacer
        self._retry = retry or RetryPolicy()
        self._timeout = timeout

    def __repr__(self) -> str:
        # Never the key: reprs end up in logs and tracebacks.
        return f"{type(self).__name__}({self.base_url!r})"

    def close(self) -> None:
        """Release connections."""
        self._client.close()

    def _headers(self) -> dict[str, str]:
        # The key travels only in this header: URLs end up in logs, proxies and histories.
        return {"X-Goog-Api-Key": self._key} if self._key else {}

    def _timeout_within(self, seconds_left: float) -> httpx.Timeout:
        """The configured timeouts, each cut down so no attempt outlives the retry deadline."""

        def cap(value: float | None) -> float:
            return seconds_left if value is None else min(value, seconds_left)

        t = self._timeout
        return httpx.Timeout(
            connect=cap(t.connect), read=cap(t.read), write=cap(t.write), pool=cap(t.pool)
        )

    def _paced_retry(self, what: str, attempt: Callable[[float], T]) -> T:
        """Run `attempt` under the retry policy, pacing every try (each one spends quota)."""

        def paced(seconds_left: float) -> T:
            waited = self._pacer.acquire()
            if waited:
                log.debug("%s: paced %.2f s to stay under the quota", what, waited)
            return attempt(max(seconds_left - waited, 0.001))

        return call_with_retry(self._retry, what, paced)


def parse_document(data: object, what: str) -> Document:
    """A Document from upstream JSON; ProtocolError naming the request if the shape is wrong."""
    try:
        return Document.from_api(data)
    except ProtocolError as exc:
        raise ProtocolError(f"{what}: {exc.message}") from None


def check_order(wanted: Sequence[str], docs: list[Document], what: str) -> list[Document]:
    """`docs` if they are exactly the `wanted` names in order; otherwise ProtocolError."""
    got = [d.name for d in docs]
    if got == list(wanted):
        return docs
    difference = f"asked for {len(wanted)}, got {len(got)}"
    for i, (w, g) in enumerate(zip(wanted, got, strict=False)):
        if w != g:
            difference = f"#{i + 1} asked {w}, got {g}"
            break
    raise ProtocolError(
        f"{what}: the answer does not hold exactly the requested documents in order ({difference})"
    )


def batch_of(names: Sequence[str]) -> list[str]:
    """`names` as a list, refusing more than one call may carry (the API would say 400)."""
    wanted = list(names)
    if len(wanted) > MAX_BATCH:
        raise InvalidInput(
            f"at most {MAX_BATCH} documents can be fetched in one call, got {len(wanted)}",
            hint="use mirror.upstream.batching.iter_fetch to split any number of names",
        )
    return wanted
