"""Build the upstream client the settings ask for: REST or MCP, with client, pacer, retries."""

from __future__ import annotations

import httpx

from .. import __version__
from ..config import ENV_API_KEY, Settings, Transport
from ..errors import ConfigError, NetworkForbidden
from . import Upstream
from .base import DEFAULT_TIMEOUT
from .mcp import McpUpstream
from .pacing import Pacer
from .rest import RestUpstream
from .retry import RetryPolicy

USER_AGENT = f"dk-mirror/{__version__}"


def build(
    settings: Settings,
    *,
    transport: httpx.BaseTransport | None = None,
    retry: RetryPolicy | None = None,
) -> Upstream:
    """The upstream client for `settings`; ConfigError (before any network) if it cannot work."""
    if settings.strict_offline:
        # Defence in depth: Mirror refuses first, but no client may exist in strict mode.
        raise NetworkForbidden(f"strict offline mode: no client for {settings.upstream}")
    if settings.is_google and not settings.api_key:
        raise ConfigError(
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
    # The pacers share the policy's clock and sleep, so a test that patches waits away
    # never sleeps in a pacer either. Search has a quota of its own, so a pacer of its own.
    pacer = Pacer(settings.get_per_minute, clock=policy.clock, sleep=policy.sleep)
    search_pacer = Pacer(settings.search_per_minute, clock=policy.clock, sleep=policy.sleep)
    cls = McpUpstream if settings.transport is Transport.MCP else RestUpstream
    return cls(
        settings.upstream, settings.api_key, client, pacer, policy, search_pacer=search_pacer
    )
