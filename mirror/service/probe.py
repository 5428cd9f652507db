"""Probe use case: one real, cheap upstream request that says whether fetching would work.

`doctor` runs it: a BASIC-view (metadata only) get of one known document, tried once. What
can go wrong maps onto the error tree: no key set, a key upstream rejects, the API not
enabled (or the key restricted to other APIs), a host that does not answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..config import ENV_API_KEY, Settings
from ..errors import (
    AuthError,
    ConfigError,
    MirrorError,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
)
from ..models import View
from ..upstream import Upstream


class Verdict(StrEnum):
    """What the probe found out about the upstream."""

    OK = "ok"
    NO_KEY = "no key"
    BAD_KEY = "bad key"
    API_DISABLED = "API disabled"
    OVER_QUOTA = "over quota"
    UNREACHABLE = "unreachable"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """The verdict, what happened and what to do (never the key)."""

    verdict: Verdict
    upstream: str
    detail: str
    hint: str | None = None

    @property
    def ok(self) -> bool:
        """True when a fetch would work."""
        return self.verdict is Verdict.OK

    def to_json(self) -> dict[str, Any]:
        """As `doctor --json` reports the upstream check."""
        return {
            "verdict": str(self.verdict),
            "upstream": self.upstream,
            "detail": self.detail,
            "hint": self.hint,
        }


# Errors whose cause the user can name, most specific first.
_VERDICTS: tuple[tuple[type[MirrorError], Verdict], ...] = (
    (AuthError, Verdict.BAD_KEY),
    (PermissionDenied, Verdict.API_DISABLED),
    (QuotaExceeded, Verdict.OVER_QUOTA),
    (Unavailable, Verdict.UNREACHABLE),
)


def probe(settings: Settings, upstream: Callable[[], Upstream], name: str) -> ProbeReport:
    """Ask upstream for the metadata of document `name` once, and say what that shows.

    Takes the settings and a way to open the client, not a Context: it needs no store, so
    `doctor` can probe even when the store is broken or not yet migrated.
    """
    upstream_url = settings.upstream
    try:
        client = upstream()
        client.batch_get([name], View.BASIC)
    except NotFound:
        # Upstream answered, so the key and the API work; the document itself is not the point.
        return ProbeReport(Verdict.OK, upstream_url, f"answered (it has no {name})")
    except ConfigError as exc:
        verdict = Verdict.NO_KEY if not settings.api_key else Verdict.ERROR
        return ProbeReport(verdict, upstream_url, exc.message, exc.hint)
    except MirrorError as exc:
        verdict = next((v for kind, v in _VERDICTS if isinstance(exc, kind)), Verdict.ERROR)
        hint = exc.hint
        if verdict is Verdict.BAD_KEY and not settings.api_key:
            verdict = Verdict.NO_KEY
        return ProbeReport(verdict, upstream_url, exc.message, hint)
    key = "with the key in " + ENV_API_KEY if settings.api_key else "without a key"
    return ProbeReport(Verdict.OK, upstream_url, f"answered a metadata-only get {key}")


def probe_once(settings: Settings, allowed: Callable[[], object], name: str) -> ProbeReport:
    """`probe` on a client of its own that tries once with no waits (a check should answer
    in seconds, not retry for a minute); `allowed` raises where no upstream may be used."""
    from ..upstream import open_upstream
    from ..upstream.retry import RetryPolicy

    opened: list[Upstream] = []

    def upstream() -> Upstream:
        allowed()
        opened.append(
            open_upstream(settings, retry=RetryPolicy(max_attempts=1, sleep=lambda _s: None))
        )
        return opened[-1]

    try:
        return probe(settings, upstream, name)
    finally:
        for client in opened:
            client.close()
