"""Document resource names: accept them as people paste them, return one canonical form.

Canonical: `documents/{host}/{path}` -- lower-case host, no scheme, no query or fragment,
no trailing or doubled slashes. This is the API's `name`/`parent`, and `uri` is
`https://` + the part after `documents/`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from .errors import InvalidName
from .limits import MAX_TEXT

PREFIX = "documents/"
# The API refuses names longer than this (INVALID_ARGUMENT).
MAX_NAME_LENGTH = MAX_TEXT
FORMS = "documents/{host}/{path}, https://{host}/{path} or {host}/{path}"

_HOST = re.compile(
    r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$"
)
_SCHEME = re.compile(r"^https?://", re.IGNORECASE)
# Whitespace and control characters never occur in a resource name; they mean a bad paste.
_BAD_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")


# Names repeat (every cache lookup normalises its request); parsing each once is enough.
@lru_cache(maxsize=8192)
def normalize(raw: str) -> str:
    """Return the canonical resource name for `raw`, or raise InvalidName saying why."""
    text = raw.strip() if isinstance(raw, str) else raw
    if not isinstance(text, str) or not text:
        raise InvalidName("empty document name", hint=f"give a name like {FORMS}")
    if _BAD_CHARS.search(text):
        raise InvalidName(
            f"document name {text[:80]!r} contains whitespace or control characters",
            hint=f"give one name per argument, like {FORMS}",
        )
    if _SCHEME.match(text):
        rest = text.split("://", 1)[1]
    elif text.startswith(PREFIX):
        rest = text[len(PREFIX) :]
    else:
        rest = text
    # A pasted URL may carry a fragment (#section) or a query; neither is part of the name.
    rest = rest.split("#", 1)[0].split("?", 1)[0]
    host, _, path = rest.partition("/")
    host = host.lower()
    if not _HOST.match(host):
        raise InvalidName(
            f"{text[:120]!r} is not a document name: {host[:80]!r} is not a host name",
            hint=f"give a name like {FORMS}",
        )
    segments = [s for s in path.split("/") if s]
    if any(s in (".", "..") for s in segments):
        raise InvalidName(
            f"{text[:120]!r} has a '.' or '..' path segment, which no document name has",
            hint="give the document's path as it appears in its URL",
        )
    name = PREFIX + "/".join([host, *segments])
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidName(
            f"document name is {len(name)} characters; the API allows at most {MAX_NAME_LENGTH}",
            hint="check that the name was not pasted twice or joined with another",
        )
    return name


def normalize_every(raws: Iterable[str]) -> list[str]:
    """Normalise many names, reporting every invalid one at once (not just the first)."""
    out, bad = [], []
    for raw in raws:
        try:
            out.append(normalize(raw))
        except InvalidName as exc:
            bad.append(exc.message)
    if bad:
        raise InvalidName(
            f"{len(bad)} invalid name(s); nothing was done:\n  " + "\n  ".join(bad[:20]),
            hint=f"names look like {FORMS}",
        )
    return out


def normalize_all(raws: Iterable[str]) -> list[str]:
    """Normalise every name, keeping order; duplicates stay (callers decide)."""
    return [normalize(raw) for raw in raws]


def uri_of(name: str) -> str:
    """The https URI the API gives for a canonical resource name."""
    return "https://" + name[len(PREFIX) :]


def read_names(lines: Iterable[str]) -> list[str]:
    """Names from a names file: one per line; blank lines and `#` comments are skipped, and
    the byte-order mark an editor on Windows puts first."""
    out = []
    for line in lines:
        stripped = line.split(" #", 1)[0].strip().lstrip("\ufeff")
        if stripped and not stripped.startswith("#"):
            out.append(normalize(stripped))
    return out
