"""How a `dk-mirror serve` process behaves: mode, fetching, address, token. No web imports.

mode         fetching off (default)                 --allow-fetch
cache-first  store only; a miss is an error         store first; misses fetched and written
offline      store only; a miss is an error         refused: offline never fetches
live         refused: live needs --allow-fetch      upstream every time; written through
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..config import ENV_SERVE_TOKEN
from ..errors import ConfigError
from ..policy import Mode


class ServeMode(StrEnum):
    """How a server answers: see the table in the module docstring."""

    CACHE_FIRST = "cache-first"
    OFFLINE = "offline"
    LIVE = "live"


MODES = tuple(m.value for m in ServeMode)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
# A shorter bearer token can be guessed by anyone who can reach the port.
MIN_TOKEN_LENGTH = 16
TOKEN_HINT = (
    f"pass --token or set {ENV_SERVE_TOKEN} to a random secret of at least {MIN_TOKEN_LENGTH} "
    "characters, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"
)


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    if host.lower() == "localhost":
        return True
    import ipaddress  # deferred: every CLI command imports this module, few need it

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve to anything


def is_wildcard(host: str) -> bool:
    """True for the any-address binds (0.0.0.0, ::), which listen on every interface."""
    import ipaddress

    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything `serve` decides beyond the Mirror's own settings, already validated."""

    mode: ServeMode = ServeMode.CACHE_FIRST
    allow_fetch: bool = False
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = field(default=None, repr=False)
    # Extra Host header names to accept (a DNS name for this machine, a proxy's name).
    allowed_hosts: tuple[str, ...] = ()
    # Lock files the change feeds can narrow to (`?lock=ID`): (id, the names it pins).
    feed_locks: tuple[tuple[str, frozenset[str]], ...] = ()
    # MCP tools beyond Google's three (list_changes); off, the server lists exactly Google's.
    extra_tools: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(
                f"mode {self.mode!r} is not one of {', '.join(MODES)}",
                hint="use --mode cache-first (default), offline or live",
            )
        object.__setattr__(self, "mode", ServeMode(self.mode))  # frozen: set once, typed
        if self.mode is ServeMode.OFFLINE and self.allow_fetch:
            raise ConfigError(
                "--allow-fetch contradicts offline mode, which never contacts upstream",
                hint="drop --allow-fetch, or use --mode cache-first to fetch misses",
            )
        if self.mode is ServeMode.LIVE and not self.allow_fetch:
            raise ConfigError(
                "live mode asks upstream on every request, but fetching is off (read-only)",
                hint="add --allow-fetch to let this server contact upstream and write its store",
            )
        if self.token is not None and len(self.token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"the bearer token is {len(self.token)} characters; at least "
                f"{MIN_TOKEN_LENGTH} are required",
                hint=TOKEN_HINT,
            )
        if not is_loopback(self.host) and not self.token:
            raise ConfigError(
                f"refusing to listen on {self.host} without a bearer token: anyone who can "
                "reach that address could read this mirror"
                + (" and spend its upstream quota" if self.allow_fetch else ""),
                hint=f"{TOKEN_HINT}; or bind --host 127.0.0.1 (the default)",
            )

    @property
    def fetches(self) -> bool:
        """Whether this server may contact upstream and write its store."""
        return self.allow_fetch and self.mode is not ServeMode.OFFLINE

    @property
    def live(self) -> bool:
        """Whether every request goes upstream (the store is only written through)."""
        return self.mode is ServeMode.LIVE and self.fetches

    @property
    def request_mode(self) -> Mode:
        """The caching mode every request of this server runs in (the one place it is built)."""
        return Mode(offline=not self.fetches, refresh=self.live, prefer_recorded=not self.live)

    def describe(self) -> str:
        """`cache-first, read-only` and the like, for logs and error messages."""
        return f"{self.mode}, {'fetching enabled' if self.fetches else 'read-only'}"

    def host_names(self) -> frozenset[str]:
        """Host header names (without port) requests may carry: guards against DNS rebinding."""
        names = {"localhost", "127.0.0.1", "[::1]"}
        bound = self.host.strip("[]")
        if not is_wildcard(bound):
            names.add(f"[{bound}]" if ":" in bound else bound)
        names.update(h.lower() for h in self.allowed_hosts)
        return frozenset(n.lower() for n in names)
