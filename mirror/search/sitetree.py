"""The mirrored pages as a tree of hosts and folders, for navigation; pure.

Built once from (name, title) pairs in name order; the browser asks it for the folders and
pages of one folder (each level of the tree shown beside a page) and for a page's neighbours
within its folder (previous / next).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import names as naming


@dataclass(frozen=True, slots=True)
class Page:
    """A mirrored page: its name and title (the last path segment when it has none)."""

    name: str
    title: str


@dataclass(slots=True, eq=False)  # compared by identity: a tree of thousands of nodes
class Folder:
    """A folder: sub-folders by segment, its own pages in name order, and how many below."""

    prefix: str  # `documents/host/a/` (ends in a slash)
    folders: dict[str, Folder] = field(default_factory=dict)
    pages: list[Page] = field(default_factory=list)
    own_page: Page | None = None  # a page named like the folder (`documents/host/a`)
    count: int = 0  # pages anywhere below

    @property
    def segment(self) -> str:
        """The folder's last path segment (the host, at the top)."""
        return self.prefix.rstrip("/").rsplit("/", 1)[-1]


class SiteTree:
    """Every mirrored page, by host and path."""

    def __init__(self, pages: Iterable[tuple[str, str | None]]) -> None:
        self.root = Folder(naming.PREFIX)
        for name, title in pages:
            self._add(Page(name, title or name.rsplit("/", 1)[-1]))
        self._sort(self.root)

    def _add(self, page: Page) -> None:
        segments = page.name[len(naming.PREFIX) :].split("/")
        folder = self.root
        folder.count += 1
        for segment in segments[:-1]:
            child = folder.folders.get(segment)
            if child is None:
                child = folder.folders[segment] = Folder(folder.prefix + segment + "/")
            folder = child
            folder.count += 1
        folder.pages.append(page)

    def _sort(self, folder: Folder) -> None:
        folder.pages.sort(key=lambda p: p.name)
        folder.folders = dict(sorted(folder.folders.items()))
        for child in folder.folders.values():
            # A page beside a folder of the same name is that folder's own page.
            own = next((p for p in folder.pages if p.name == child.prefix[:-1]), None)
            child.own_page = own
            self._sort(child)

    def folder(self, prefix: str) -> Folder | None:
        """The folder at `prefix` (`documents/host/a/`), or None."""
        folder = self.root
        for segment in prefix[len(naming.PREFIX) :].split("/"):
            if not segment:
                continue
            found = folder.folders.get(segment)
            if found is None:
                return None
            folder = found
        return folder

    def path_to(self, name: str) -> list[Folder]:
        """The folders from the top down to the one holding `name` (those that exist)."""
        out = [self.root]
        for segment in name[len(naming.PREFIX) :].split("/")[:-1]:
            found = out[-1].folders.get(segment)
            if found is None:
                break
            out.append(found)
        return out

    def neighbours(self, name: str) -> tuple[Page | None, Page | None]:
        """The pages before and after `name` in its folder (None at either end)."""
        folder = self.folder(name.rsplit("/", 1)[0] + "/")
        if folder is None:
            return None, None
        names = [p.name for p in folder.pages]
        at = bisect_left(names, name)
        if at >= len(names) or names[at] != name:
            return None, None
        before = folder.pages[at - 1] if at > 0 else None
        after = folder.pages[at + 1] if at + 1 < len(folder.pages) else None
        return before, after
