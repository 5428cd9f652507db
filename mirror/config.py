"""Settings from the environment and command-line options, resolved in one place.

Every interface name lives here so docs, scripts and CI agree on them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from .errors import ConfigError, InvalidInput

ENV_HOME = "DK_MIRROR_HOME"
ENV_DB = "DK_MIRROR_DB"
ENV_UPSTREAM = "DK_MIRROR_UPSTREAM"
ENV_TRANSPORT = "DK_MIRROR_TRANSPORT"
ENV_OFFLINE = "DK_MIRROR_OFFLINE"
ENV_STRICT_OFFLINE = "DK_MIRROR_STRICT_OFFLINE"
ENV_API_KEY = "DEVELOPER_KNOWLEDGE_API_KEY"
ENV_MAX_AGE = "DK_MIRROR_MAX_AGE"
ENV_GET_RATE = "DK_MIRROR_GET_PER_MINUTE"
ENV_SEARCH_RATE = "DK_MIRROR_SEARCH_PER_MINUTE"
ENV_ANSWERS_PER_DAY = "DK_MIRROR_ANSWERS_PER_DAY"
# The window (seconds) upstream counts the per-minute quotas over; shorter paces more evenly.
ENV_QUOTA_WINDOW = "DK_MIRROR_QUOTA_WINDOW"
# Bearer token `dk-mirror serve` requires of every request (required off loopback).
ENV_SERVE_TOKEN = "DK_MIRROR_SERVE_TOKEN"
# Largest document record (one JSON line) `import` and snapshot verify/import accept.
ENV_MAX_DOCUMENT_BYTES = "DK_MIRROR_MAX_DOCUMENT_BYTES"
# Versions of each document its history keeps (the current one included).
ENV_KEEP_VERSIONS = "DK_MIRROR_KEEP_VERSIONS"
# Semantic search (vectors computed as pages are written, fused with the word ranking): on
# unless set off, for a machine too small to run the model (search then ranks by words only).
ENV_SEMANTIC = "DK_MIRROR_SEMANTIC"
# Where the embedding model's prepared graph is kept (mirror/semantic/cache.py): once per
# machine, so it may live apart from a store's home (a read-only home, a shared cache volume).
ENV_MODEL_CACHE = "DK_MIRROR_MODEL_CACHE"

# Every environment variable dk-mirror reads: the README documents exactly these, and the
# tests clear them all so a developer's own settings never leak into a run.
ENV_VARS = (
    ENV_HOME,
    ENV_DB,
    ENV_UPSTREAM,
    ENV_TRANSPORT,
    ENV_OFFLINE,
    ENV_STRICT_OFFLINE,
    ENV_API_KEY,
    ENV_MAX_AGE,
    ENV_GET_RATE,
    ENV_SEARCH_RATE,
    ENV_ANSWERS_PER_DAY,
    ENV_QUOTA_WINDOW,
    ENV_SERVE_TOKEN,
    ENV_MAX_DOCUMENT_BYTES,
    ENV_KEEP_VERSIONS,
    ENV_SEMANTIC,
    ENV_MODEL_CACHE,
)

GOOGLE_UPSTREAM = "https://developerknowledge.googleapis.com"


class Transport(StrEnum):
    """How dk-mirror talks to its upstream."""

    REST = "rest"
    MCP = "mcp"


TRANSPORTS = tuple(t.value for t in Transport)
# The documented default quota for Get + BatchGet together, per project.
DEFAULT_GET_PER_MINUTE = 100
# The documented default quota for SearchDocumentChunks, per project (a bucket of its own).
DEFAULT_SEARCH_PER_MINUTE = 100
# The documented default AnswerQuery quota, per project per day.
DEFAULT_ANSWERS_PER_DAY = 50
# A page changes a few times a year; ten versions is years of history at a few pages' cost.
DEFAULT_KEEP_VERSIONS = 10

# Upstream counts the per-minute quotas over a minute; the pacer never lets any window of this
# length hold more than its share of them. The bounds keep the bucket arithmetic meaningful.
DEFAULT_QUOTA_WINDOW = 60.0
QUOTA_WINDOW_RANGE = (1.0, 3600.0)
DB_FILE = "dk-mirror.sqlite3"
# The largest page in shared/corpus is under 100 KB as a JSON line; 16 MiB leaves room for any
# real page while bounding what one hostile line can cost (memory is a few times this).
DEFAULT_MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
# Below this a limit would refuse ordinary pages (and the manifest check reads 64 bytes).
MIN_DOCUMENT_BYTES = 1024

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> float:
    """Seconds in a duration such as `90`, `30m`, `12h`, `7d`, `2w`."""
    match = _DURATION.match(text)
    if not match:
        raise InvalidInput(
            f"{text!r} is not a duration", hint="use a number with s, m, h, d or w, e.g. 7d"
        )
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def parse_flag(name: str, text: str) -> bool:
    """A boolean environment variable; anything unexpected is an error, not a guess."""
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"{name}={text!r} is neither on nor off", hint=f"set {name}=1 or {name}=0")


def _count(env: Mapping[str, str], name: str, default: int, *, minimum: int) -> int:
    """A whole-number setting from the environment, refusing anything else."""
    text = env.get(name, str(default)).strip()
    if not text.isdigit() or int(text) < minimum:
        raise ConfigError(
            f"{name}={text!r} is not a whole number of at least {minimum}",
            hint=f"unset it to use the documented default ({default})",
        )
    return int(text)


def document_limit(env: Mapping[str, str], given: int | None = None) -> int:
    """The document size limit: `given` (an option), else the environment, else the default."""
    if given is not None:
        if given < MIN_DOCUMENT_BYTES:
            raise ConfigError(
                f"a document limit of {given} bytes is below the minimum of {MIN_DOCUMENT_BYTES}",
                hint=f"give --max-document-bytes of at least {MIN_DOCUMENT_BYTES}",
            )
        return given
    return _count(
        env, ENV_MAX_DOCUMENT_BYTES, DEFAULT_MAX_DOCUMENT_BYTES, minimum=MIN_DOCUMENT_BYTES
    )


def quota_window(env: Mapping[str, str]) -> float:
    """The quota window from the environment (a duration: `60`, `10s`, `1m`), else a minute."""
    text = env.get(ENV_QUOTA_WINDOW, "").strip()
    if not text:
        return DEFAULT_QUOTA_WINDOW
    low, high = QUOTA_WINDOW_RANGE
    try:
        seconds = parse_duration(text)
    except InvalidInput:
        seconds = -1.0
    if not low <= seconds <= high:
        raise ConfigError(
            f"{ENV_QUOTA_WINDOW}={text!r} is not a duration from {low:g} s to {high:g} s",
            hint=f"unset it to use the default ({DEFAULT_QUOTA_WINDOW:g} s, a minute)",
        )
    return seconds


def default_home() -> Path:
    """The user data directory for this platform (XDG on Linux)."""
    import platformdirs  # deferred: only needed when no DK_MIRROR_HOME/--db is given

    return Path(platformdirs.user_data_dir("dk-mirror", appauthor=False))


def db_url_from(value: str) -> str:
    """An SQLAlchemy URL from a `--db` value: a URL as given, or a path to an SQLite file."""
    if "://" in value:
        return value
    return "sqlite:///" + str(Path(value).expanduser().resolve())


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything configurable, already validated."""

    db_url: str
    upstream: str = GOOGLE_UPSTREAM
    transport: Transport = Transport.REST
    offline: bool = False
    # Any attempt to reach the network is an error (CI proving it ran offline); implies offline.
    strict_offline: bool = False
    api_key: str | None = None
    max_age: float | None = None
    get_per_minute: int = DEFAULT_GET_PER_MINUTE
    search_per_minute: int = DEFAULT_SEARCH_PER_MINUTE
    answers_per_day: int = DEFAULT_ANSWERS_PER_DAY
    quota_window: float = DEFAULT_QUOTA_WINDOW
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    keep_versions: int = DEFAULT_KEEP_VERSIONS
    # Semantic search: writes embed what they store and search fuses the vectors in.
    semantic: bool = True

    def __post_init__(self) -> None:
        # Callers (tests, embedding programs) may pass the transport as a plain string.
        object.__setattr__(self, "transport", Transport(self.transport))

    def __repr__(self) -> str:
        # Never let the key reach a log line or a traceback through repr().
        key = "set" if self.api_key else "unset"
        return (
            f"Settings(db_url={self.db_url!r}, upstream={self.upstream!r}, "
            f"transport={self.transport!r}, offline={self.offline}, api_key=<{key}>)"
        )

    @property
    def is_google(self) -> bool:
        """True when the upstream is Google's own endpoint (which needs a key)."""
        return self.upstream.rstrip("/") == GOOGLE_UPSTREAM

    @classmethod
    def resolve(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        db: str | None = None,
        upstream: str | None = None,
        transport: str | None = None,
        offline: bool | None = None,
        strict_offline: bool | None = None,
        max_age: str | None = None,
        max_document_bytes: int | None = None,
        keep_versions: int | None = None,
    ) -> Settings:
        """Options win over environment variables, which win over defaults."""
        env = os.environ if env is None else env
        db_value = db or env.get(ENV_DB)
        if db_value:
            db_url = db_url_from(db_value)
        else:
            home = Path(env[ENV_HOME]).expanduser() if env.get(ENV_HOME) else default_home()
            db_url = "sqlite:///" + str((home / DB_FILE).resolve())
        # The API's URLs are pasted with their version (`.../v1/documents/...`); dk-mirror adds
        # `/v1` itself, so a base ending in it would ask for `/v1/v1/...`, a route no server has.
        base = re.sub(
            r"/v1$", "", (upstream or env.get(ENV_UPSTREAM) or GOOGLE_UPSTREAM).rstrip("/")
        )
        if not re.match(r"^https?://[^/\s]+", base):
            raise ConfigError(
                f"upstream {base!r} is not an http(s) URL",
                hint=f"set {ENV_UPSTREAM} or --upstream to e.g. {GOOGLE_UPSTREAM}",
            )
        chosen = (transport or env.get(ENV_TRANSPORT) or "rest").lower()
        if chosen not in TRANSPORTS:
            raise ConfigError(
                f"transport {chosen!r} is not one of {', '.join(TRANSPORTS)}",
                hint=f"set {ENV_TRANSPORT} or --transport to rest or mcp",
            )
        is_strict = strict_offline or parse_flag(
            ENV_STRICT_OFFLINE, env.get(ENV_STRICT_OFFLINE, "")
        )
        is_offline = is_strict or offline or parse_flag(ENV_OFFLINE, env.get(ENV_OFFLINE, ""))
        age_text = max_age if max_age is not None else env.get(ENV_MAX_AGE)
        get_rate = _count(env, ENV_GET_RATE, DEFAULT_GET_PER_MINUTE, minimum=1)
        search_rate = _count(env, ENV_SEARCH_RATE, DEFAULT_SEARCH_PER_MINUTE, minimum=1)
        answers = _count(env, ENV_ANSWERS_PER_DAY, DEFAULT_ANSWERS_PER_DAY, minimum=0)
        window = quota_window(env)
        return cls(
            db_url=db_url,
            upstream=base,
            transport=Transport(chosen),
            offline=bool(is_offline),
            strict_offline=bool(is_strict),
            api_key=env.get(ENV_API_KEY) or None,
            max_age=parse_duration(age_text) if age_text else None,
            get_per_minute=get_rate,
            search_per_minute=search_rate,
            answers_per_day=answers,
            quota_window=window,
            max_document_bytes=document_limit(env, max_document_bytes),
            keep_versions=keep_versions
            if keep_versions is not None
            else _count(env, ENV_KEEP_VERSIONS, DEFAULT_KEEP_VERSIONS, minimum=1),
            # Unset or empty: the default, on.
            semantic=parse_flag(ENV_SEMANTIC, env.get(ENV_SEMANTIC) or "on"),
        )
