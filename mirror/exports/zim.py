"""`export zim`: one ZIM file (openZIM) for Kiwix and the readers of its format.

Every page is rendered and sanitised as the `site` export renders it (site.PageRenderer: the
browser's renderer), without the site's search box and script ban, since Kiwix puts its own
search box and scripts into the pages (the sanitiser still removes the documents' scripts); links
between exported pages are relative, so they resolve between the ZIM's entries. Entries:

    index.html                   the main page: every page, by data source and top folder
    <host>/<path>.html           one page per document (the site export's paths)
    _dk/*.css                    the browser's stylesheets
    NOTICE.md                    the licence notice

libzim adds the title index and the full-text index (Xapian). Metadata: Name, Title,
Description, LongDescription, Language, Creator (Google), Publisher (dk-mirror), Date and
X-ContentAsOf (the newest `updateTime` of the pages, never the clock), Source, License,
Tags, Scraper, the 48x48 Illustration Kiwix asks for, and X-ContentDigest, which onefile.py
compares to skip a re-export with no change.

Determinism: entries are added in name order and libzim sorts them by path, so two exports of
the same pages hold the same entries with the same bytes and the same metadata. libzim also
writes random bytes (the file's uuid, which the Python binding cannot set, and the uuids of the
two Xapian indexes, all covered by the checksum at the end): zim_stamp.py replaces them with
uuids derived from the content digest, so two exports of the same pages are byte-identical.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import InvalidInput
from ..timestamps import canonical_timestamp, instant_key
from . import attribution, site, zim_stamp
from .base import Entry, Pages

if TYPE_CHECKING:
    from . import zim_archive

LANGUAGE = "eng"  # ISO 639-3, as the ZIM Language metadata and libzim's indexer want it
DIGEST_KEY = "X-ContentDigest"
AS_OF_KEY = "X-ContentAsOf"
ILLUSTRATION_SIZE = 48
INSTALL = "pip install 'dk-mirror[zim]'"
# Kiwix's limits on two metadata (openZIM metadata spec): Title 30 characters, Description 80.
_TITLE_CHARS, _DESCRIPTION_CHARS = 30, 80
# Stand-in Date for pages without any updateTime: a fixed day, not the clock, so the bytes
# stay the same; said in a note.
_NO_DATE = "1970-01-01"


def _load_libzim() -> Any:
    try:
        from . import zim_archive
    except ImportError:
        # One line that says what to run (a hint line would only repeat it).
        raise InvalidInput(
            f"export zim needs libzim (GPL-3.0, an optional extra): {INSTALL}"
        ) from None
    return zim_archive


def newest_update(entries: list[Entry]) -> str | None:
    """The newest `updateTime` of the pages (the content is as of then), in canonical UTC
    form (compared as instants: offsets and fractions differ between pages), or None."""
    keys = [k for e in entries if e.update_time and (k := instant_key(e.update_time))]
    return canonical_timestamp(max(keys) + "Z") if keys else None


def zim_name(prefix: str | None) -> str:
    """The Name metadata, `dk-mirror_en_<selection>`: what Kiwix groups a file's versions by."""
    scope = re.sub(r"[^A-Za-z0-9.]+", "-", (prefix or "").removeprefix("documents/"))
    return f"dk-mirror_en_{scope.strip('-.')[:80] or 'all'}"


def metadata(pages: Pages, as_of: str | None, digest: str) -> dict[str, str]:
    """Every text metadata of the ZIM, by name."""
    hosts = sorted({e.data_source for e in pages.entries})
    day = as_of[:10] if as_of else _NO_DATE  # canonical UTC: starts with YYYY-MM-DD
    count = len(pages.entries)
    licence = (
        f"Content under CC BY 4.0 ({attribution.CC_BY}), code samples under Apache 2.0 "
        f"({attribution.APACHE}). Each page links to its original address."
    )
    found = {AS_OF_KEY: as_of} if as_of else {}
    return found | {
        "Name": zim_name(pages.selection.prefix),
        "Title": site.SITE_TITLE[:_TITLE_CHARS],
        "Description": f"{count} pages of Google's developer docs, as of {day}"[
            :_DESCRIPTION_CHARS
        ],
        "LongDescription": (
            f"{count} pages of Google's developer documentation ({', '.join(hosts)}), as served "
            f"by the Developer Knowledge API and exported by dk-mirror; content as of "
            f"{as_of or 'an unknown date'}. {licence}"
        ),
        "Language": LANGUAGE,
        "Creator": "Google",
        "Publisher": "dk-mirror",
        "Date": day,
        "Source": " ".join(f"https://{host}/" for host in hosts),
        "License": licence,
        "Tags": "google;developer;documentation;_ftindex:yes;_pictures:no;_videos:no;_details:yes",
        "Scraper": f"dk-mirror {__version__}",
        DIGEST_KEY: digest,
    }


def _illustration() -> bytes:
    return (resources.files("mirror.exports") / "zim_assets" / "illustration-48.png").read_bytes()


class ZimExport:
    """One run of the zim format (no options)."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        del options
        self._zim = _load_libzim()  # here, so a missing extra fails before any page is read
        self.notes: list[str] = []

    def stored_digest(self, path: Path) -> str | None:
        """The digest a dk-mirror ZIM at `path` was made from (None: not one)."""
        found: str | None = self._zim.read_metadata(path, DIGEST_KEY)
        return found

    def write(self, pages: Pages, target: Path, digest: str) -> None:
        """Make the ZIM at `target`: metadata, illustration, pages, main page, assets."""
        as_of = newest_update(pages.entries)
        if as_of is None:
            self.notes.append(f"no page has an updateTime: the ZIM's Date is {_NO_DATE}")
        hosts = frozenset(e.data_source for e in pages.entries)
        renderer = site.PageRenderer(pages.names, hosts, reader=True)
        with self._zim.creating(target, main_path=site.INDEX.as_posix(), language=LANGUAGE) as out:
            for name, value in sorted(metadata(pages, as_of, digest).items()):
                out.metadata(name, value)
            out.illustration(ILLUSTRATION_SIZE, _illustration())
            for item in self._entries(pages, renderer):
                out.add(item)
        unstamped = zim_stamp.stamp(target, digest)
        if unstamped:
            self.notes.append(
                f"the ZIM is valid but not byte-identical to another export: {unstamped}"
            )

    def _entries(self, pages: Pages, renderer: site.PageRenderer) -> Iterator[zim_archive.Blob]:
        blob = self._zim.Blob
        for doc in pages.documents():
            path = site.page_path(doc.name)
            _, body = renderer.body(doc, path)
            page = renderer.page(doc, path, body)
            yield blob(path.as_posix(), doc.title or doc.name, "text/html", page, front=True)
        index = site.index_page(pages.entries, reader=True)
        yield blob(site.INDEX.as_posix(), site.SITE_TITLE, "text/html", index, front=True)
        for asset in site.assets():
            if asset.path.suffix == ".css":  # search.js serves the site's own search only
                yield blob(asset.path.as_posix(), "", "text/css", asset.data, front=False)
        notice = attribution.NOTICE.encode("utf-8")
        yield blob(attribution.NOTICE_PATH.as_posix(), "Notice", "text/plain", notice, front=False)


FORMAT = ZimExport
