"""Build the upstream client the settings ask for: REST or MCP, with client, pacer, retries."""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from .. import __version__
from ..config import ENV_API_KEY, Settings, Transport
from ..errors import MissingApiKey, NetworkForbidden
from .base import DEFAULT_TIMEOUT
from .interface import Upstream
from .mcp import McpUpstream
from .pacing import Pacer, Pacing, Rule
from .rest import RestUpstream
from .retry import RetryPolicy

USER_AGENT = f"dk-mirror/{__version__}"


def build(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    retry: RetryPolicy | None = None,
    pacers: Mapping[str, Pacing] | None = None,
) -> Upstream:
    """The upstream client for `settings`; ConfigError (before any network) if it cannot work."""
    if settings.strict_offline:
        # Defence in depth: Mirror refuses first, but no client may exist in strict mode.
        raise NetworkForbidden(f"strict offline mode: no client for {settings.upstream}")
    if settings.is_google and not settings.api_key:
        raise MissingApiKey(
            f"no API key for {settings.upstream}",
            hint=f"set {ENV_API_KEY} to a Developer Knowledge API key, or use --offline",
        )
    policy = retry or RetryPolicy()
    client = httpx.Client(
        transport=transport,
        timeout=DEFAULT_TIMEOUT,
        headers={"User-Agent": USER_AGENT},
        # A redirect would resend the key header to wherever it points; refuse to follow.
        follow_redirects=False,
    )
    given = pacers or {}
    pacer = given.get("get") or in_process_pacer(settings, "get", policy)
    search_pacer = given.get("search") or in_process_pacer(settings, "search", policy)
    cls = McpUpstream if settings.transport is Transport.MCP else RestUpstream
    return cls(
        settings.upstream, settings.api_key, client, pacer, policy, search_pacer=search_pacer
    )


def quota_rule(settings: Settings, bucket: str) -> Rule:
    """The pacing rule for a quota bucket ("get": Get + BatchGet, "search") under `settings`."""
    per_minute = {"get": settings.get_per_minute, "search": settings.search_per_minute}[bucket]
    return Rule.per_minute(per_minute, settings.quota_window)


def in_process_pacer(settings: Settings, bucket: str, policy: RetryPolicy) -> Pacer:
    """A bucket in this process's memory: paces this process's calls only."""
    # The pacer shares the policy's clock and sleep, so a test that patches waits away
    # never sleeps in a pacer either. Search has a quota of its own, so a pacer of its own.
    return Pacer.for_rule(quota_rule(settings, bucket), clock=policy.clock, sleep=policy.sleep)
