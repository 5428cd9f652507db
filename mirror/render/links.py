"""Where a link inside a mirrored document points: another mirrored page, a missing one, or away.

Pure functions: the page handler collects every href, asks the store once which candidate
names exist, then classifies each link with `classify`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TypeGuard
from urllib.parse import quote, urljoin, urlsplit

from .. import names as naming
from ..errors import InvalidInput

# The upstream corpus's data sources (reference, section 7). A link to one of these hosts is
# a link to a *document* (mirrored or not); any other host is simply an external site.
UPSTREAM_HOSTS = frozenset(
    {
        "adk.dev",
        "ai.google.dev",
        "antigravity.google",
        "cloud.google.com",
        "dart.dev",
        "developer.android.com",
        "developer.chrome.com",
        "developers.home.google.com",
        "developers.google.com",
        "docs.apigee.com",
        "docs.cloud.google.com",
        "docs.flutter.dev",
        "firebase.google.com",
        "fuchsia.dev",
        "geminicli.com",
        "genkit.dev",
        "go.dev",
        "mapsplatform.google.com",
        "web.dev",
        "www.tensorflow.org",
    }
)
# Schemes a link may keep; anything else (javascript:, data:, vbscript:, ...) loses its href.
_SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


@dataclass(frozen=True, slots=True)
class Link:
    """How to render one link: its new href (None drops it) and what kind of target it is."""

    href: str | None
    kind: str  # "local", "missing", "external", "anchor" or "unsafe"
    name: str | None = None  # the document name, for local and missing links


def is_web_url(url: object) -> TypeGuard[str]:
    """Whether `url` may be written as a link: an absolute http(s) URL and nothing else."""
    if not isinstance(url, str) or any(ord(c) < 0x20 or c == "\x7f" for c in url):
        return False
    parts = urlsplit(url)
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc) and url == url.strip()


def doc_path(name: str) -> str:
    """The browser's URL path for a canonical document name."""
    return "/doc/" + quote(name[len(naming.PREFIX) :], safe="/-._~")


def _names_for(url: str) -> list[str]:
    """Document names a URL may stand for: as written, without `.md`, without `/index`."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    variants = [path]
    if path.endswith(".md"):
        path = path[:-3]
        variants.append(path)
    if path.endswith("/index"):
        variants.append(path[: -len("/index")])
    out = []
    for variant in variants:
        try:
            out.append(naming.normalize(f"{parts.hostname or ''}{variant}"))
        except InvalidInput:
            continue
    return out


def candidates(href: str, base_uri: str) -> tuple[str | None, list[str]]:
    """The absolute URL of `href` (None if it is not http(s)) and the names it may denote,
    best guess first."""
    href = href.strip()
    if not href or href.startswith("#"):
        return None, []
    scheme = urlsplit(href).scheme.lower()
    if scheme and scheme not in ("http", "https"):
        return None, []
    absolute = urljoin(base_uri, href)
    # The most-stripped reading (no `.md`, no `/index`) is the likeliest document name.
    found = _names_for(absolute)[::-1]
    if not scheme and not href.startswith("/"):
        # Sources like tensorflow's keep a section's page as `section/index.md`, so a page's
        # relative links may be relative to the page itself as a folder: try both readings.
        found += _names_for(urljoin(base_uri.rstrip("/") + "/", href))[::-1]
    return absolute, list(dict.fromkeys(found))


def all_candidates(hrefs: Iterable[str], base_uri: str) -> list[str]:
    """Every candidate name of every href, without repeats (for one batched lookup)."""
    out: dict[str, None] = {}
    for href in hrefs:
        out.update(dict.fromkeys(candidates(href, base_uri)[1]))
    return list(out)


def classify(
    href: str,
    base_uri: str,
    existing: Collection[str],
    document_hosts: Collection[str],
    current: str | None = None,
) -> Link:
    """Rewrite one link: mirrored documents to /doc/..., the rest kept and marked;
    a link to a section of `current` (the page itself) stays on the page."""
    stripped = href.strip()
    if stripped.startswith("#"):
        return Link(stripped, "anchor")
    scheme = urlsplit(stripped).scheme.lower()
    if scheme and scheme not in _SAFE_SCHEMES:
        return Link(None, "unsafe")
    if scheme == "mailto":
        return Link(stripped, "external")
    absolute, names = candidates(stripped, base_uri)
    if absolute is None:
        return Link(None, "unsafe")
    fragment = urlsplit(absolute).fragment
    suffix = "#" + quote(fragment, safe="-._~:!$&'()*+,;=/?@") if fragment else ""
    for name in names:
        if name == current and suffix:
            return Link(suffix, "anchor")
        if name in existing:
            return Link(doc_path(name) + suffix, "local", name)
    host = (urlsplit(absolute).hostname or "").lower()
    if names and (host in document_hosts or host in UPSTREAM_HOSTS):
        # Point at the page's real address (not a `.md` source path) for when one is online.
        return Link(naming.uri_of(names[0]) + suffix, "missing", names[0])
    return Link(absolute, "external")
