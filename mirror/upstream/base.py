"""What the REST and MCP clients share: the client, the key header, pacing, retries, timeouts."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import httpx

from .. import limits
from ..config import DEFAULT_SEARCH_PER_MINUTE, ENV_API_KEY
from ..errors import AuthError, NotFound, ProtocolError
from ..models import Document
from .pacing import Pacer, Pacing
from .retry import GET_QUOTA, Quota, RetryPolicy, Transient, call_with_retry, is_quota
from .stats import CallStats, UpstreamStats

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
        pacer: Pacing,
        retry: RetryPolicy | None = None,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        search_pacer: Pacing | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.label = f"{self.kind} {self.base_url}"
        self._key = api_key
        self._client = client
        self._retry = retry or RetryPolicy()
        # One pacer per quota bucket: Search has a per-minute quota of its own, apart from
        # Get + BatchGet, so a crawl's fetches never hold up a search or the reverse. The
        # default shares the policy's clock and sleep, as the factory's pacers do.
        self._pacers: dict[str, Pacing] = {
            "get": pacer,
            "search": search_pacer
            or Pacer(DEFAULT_SEARCH_PER_MINUTE, clock=self._retry.clock, sleep=self._retry.sleep),
        }
        self._timeout = timeout
        self._stats = CallStats(self._retry.clock)

    @property
    def stats(self) -> UpstreamStats:
        """Calls, retries, 429s and seconds spent waiting so far (for a progress display)."""
        return self._stats.snapshot()

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

    def _paced_retry(self, what: str, attempt: Callable[[float], T], quota: Quota = GET_QUOTA) -> T:
        """Run `attempt` under the retry policy, pacing every try (each one spends quota)."""
        pacer = self._pacers[quota.bucket] if quota.bucket else None
        stats = self._stats
        paced_for = 0.0
        # A call is "waiting for quota" in its pacer, and from a 429 until its retry's turn.
        after_429 = False

        def paced(seconds_left: float) -> T:
            nonlocal paced_for, after_429
            if not after_429:
                stats.waiting(+1)
            after_429 = False
            try:
                waited = pacer.acquire() if pacer else 0.0
            finally:
                stats.waiting(-1)
            if waited > 0:
                log.debug("%s: paced %.2f s to stay under the quota", what, waited)
                # Waiting our turn is not upstream failing: the retry deadline does not count
                # it, so a long queue for a shared quota (or another process's Retry-After)
                # cannot use up this call's deadline before its first try.
                paced_for += waited
            stats.called(max(waited, 0.0))
            try:
                return attempt(seconds_left)
            except NotFound:
                stats.not_found()  # a paced call spent on a name upstream lacks
                raise
            except Transient as exc:
                if is_quota(exc):
                    stats.throttled()
                    if pacer:
                        # Every later call (in every process sharing the bucket) slows down,
                        # not only this one's retry, which waits Retry-After in any case.
                        pacer.slow_down(exc.retry_after)
                raise

        def on_retry(exc: BaseException | None, seconds: float) -> None:
            nonlocal after_429
            stats.retrying(seconds, for_quota=is_quota(exc))
            if is_quota(exc):
                stats.waiting(+1)  # until the retry has its slot
                after_429 = True

        try:
            return call_with_retry(
                self._retry, what, paced, quota, on_retry, paused=lambda: paced_for
            )
        except AuthError as exc:
            if self._key:
                raise
            # Without a key the real cause is the unset variable, not an invalid key.
            raise AuthError(
                f"{ENV_API_KEY} is not set, and {self.base_url} refused the request without "
                f"an API key ({exc.message})",
                status=exc.status,
                code=exc.code,
                hint=f"set {ENV_API_KEY} to a Developer Knowledge API key, or use --offline",
            ) from None
        finally:
            if after_429:  # interrupted during a Retry-After wait: no longer waiting
                stats.waiting(-1)


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
    if wanted:
        limits.check_names(wanted)
    return wanted


def check_query(query: str) -> str:
    """`query` if upstream would take it; InvalidInput (before any request) if it would not."""
    limits.check_query(query)
    return query  # sent as given: the check only refuses what upstream would


def check_filter(filter: str | None) -> str | None:
    """`filter` if present and not too long (upstream: INVALID_ARGUMENT); None if empty."""
    return limits.check_filter_length(filter)


def page_size_of(page_size: int | None) -> int | None:
    """The pageSize to send: None if not given (upstream's default), else limits.page_size."""
    return None if page_size is None else limits.page_size(page_size)


def quoted(query: str, limit: int = 60) -> str:
    """`query` quoted for a message and cut short: a message names the request, not repeats it."""
    text = " ".join(query.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
