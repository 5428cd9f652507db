"""The change log as Atom (RFC 4287) and JSON Feed 1.1 documents: pure formatting, no I/O.

Each entry is one event: its title says what happened to which page, its summary what the
change touched, and its link opens the change's diff in the docs browser. Ids are stable
(derived from the event id and the content hash), so a feed reader never shows an entry twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode
from xml.etree import ElementTree as ET

from .. import names as naming
from ..models import rfc3339
from .events import CHANGED, ChangeEvent

ATOM_NS = "http://www.w3.org/2005/Atom"
ATOM_TYPE = "application/atom+xml; charset=utf-8"
JSON_FEED_TYPE = "application/feed+json; charset=utf-8"
JSON_FEED_VERSION = "https://jsonfeed.org/version/1.1"
# Namespace of the entry ids (uuid5): any fixed UUID does; this one is ours alone.
_ID_SPACE = uuid.UUID("6b1e7a52-31d4-5c1e-9d6a-0c3a2f1e8b31")
# A feed without entries still needs an <updated>: the epoch, not the wall clock (the same
# request gives the same bytes).
_NEVER = 0.0


@dataclass(frozen=True, slots=True)
class FeedInfo:
    """What a feed says about itself: its title, its own URL and the site's root URL."""

    title: str
    self_url: str  # absolute
    site_url: str  # absolute, ending in "/"


def diff_path(event: ChangeEvent) -> str:
    """The docs browser's page for the event: the change's diff, else the document's history
    (`/history/{name}?from=OLD&to=NEW`, hashes cut to 12 hex digits)."""
    path = "/history/" + quote(event.name.removeprefix(naming.PREFIX), safe="/-._~")
    if event.kind != CHANGED:
        return path
    given = {k: v[:12] for k, v in (("from", event.old_sha256), ("to", event.new_sha256)) if v}
    return path + ("?" + urlencode(given) if given else "")


def entry_id(event: ChangeEvent) -> str:
    """A stable, unique id for the event (a URN: no host in it, so a mirror moved keeps it)."""
    sha = event.new_sha256 or event.old_sha256 or ""
    return uuid.uuid5(_ID_SPACE, f"{event.id}:{event.name}:{sha}").urn


def entry_title(event: ChangeEvent) -> str:
    """`changed: developer.chrome.com/docs/x` and the like."""
    return f"{event.kind}: {event.name.removeprefix(naming.PREFIX)}"


def atom(events: Sequence[ChangeEvent], info: FeedInfo) -> bytes:
    """An Atom feed of `events` (newest first), UTF-8 XML."""
    ET.register_namespace("", ATOM_NS)

    def sub(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
        element = ET.SubElement(parent, f"{{{ATOM_NS}}}{tag}", attrs)
        if text is not None:
            element.text = text
        return element

    feed = ET.Element(f"{{{ATOM_NS}}}feed")
    sub(feed, "id", uuid.uuid5(_ID_SPACE, info.self_url).urn)
    sub(feed, "title", info.title)
    sub(feed, "updated", _when(events[0].observed_at if events else _NEVER))
    sub(feed, "link", rel="self", type="application/atom+xml", href=info.self_url)
    sub(feed, "link", rel="alternate", type="text/html", href=info.site_url + "changes")
    author = sub(feed, "author")
    sub(author, "name", "dk-mirror")
    sub(feed, "generator", "dk-mirror")
    for event in events:
        entry = sub(feed, "entry")
        sub(entry, "id", entry_id(event))
        sub(entry, "title", entry_title(event))
        sub(entry, "updated", _when(event.observed_at))
        sub(entry, "link", rel="alternate", type="text/html", href=_absolute(info, event))
        sub(entry, "summary", event.headline())
        for name in event.classes or ():
            sub(entry, "category", term=name)
        sub(entry, "category", term=event.kind)
    return bytes(ET.tostring(feed, encoding="utf-8", xml_declaration=True))


def json_feed(events: Sequence[ChangeEvent], info: FeedInfo) -> dict[str, Any]:
    """A JSON Feed 1.1 of `events` (newest first); each item carries the event as `_dk_mirror`."""
    return {
        "version": JSON_FEED_VERSION,
        "title": info.title,
        "home_page_url": info.site_url + "changes",
        "feed_url": info.self_url,
        "authors": [{"name": "dk-mirror"}],
        "items": [
            {
                "id": entry_id(event),
                "url": _absolute(info, event),
                "title": entry_title(event),
                "content_text": event.headline(),
                "date_published": _when(event.observed_at),
                "tags": [*(event.classes or ()), event.kind],
                # JSON Feed's extension convention: an underscore-prefixed object of our own.
                "_dk_mirror": event.to_json(),
            }
            for event in events
        ],
    }


def _absolute(info: FeedInfo, event: ChangeEvent) -> str:
    return info.site_url.rstrip("/") + diff_path(event)


def _when(epoch: float) -> str:
    # RFC 3339 in UTC, as Atom's Date construct and JSON Feed require.
    return rfc3339(epoch) or ""
