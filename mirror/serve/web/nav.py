"""What the navigation beside a page shows: the tree opened down to it, and its neighbours.

Only the folders on the way to the current page are filled in; every other folder is a closed
entry that opens its /browse/ page, or, with JavaScript, loads its contents from /tree.json.
So a page beside 50,000 others carries a few hundred links, not 50,000.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...render.links import doc_path
from ...search.sitetree import Folder, SiteTree
from .views import browse_path

# Pages of one folder listed in the tree; the rest are a "more" link to the folder's page.
MAX_PAGES = 200


@dataclass(frozen=True, slots=True)
class PageLink:
    """A page in the tree."""

    label: str
    url: str
    current: bool = False


@dataclass(slots=True)
class FolderNode:
    """A folder in the tree: open (on the way to the current page, contents listed) or not."""

    label: str
    prefix: str
    url: str  # its own page if it has one, else its /browse/ listing
    count: int
    open: bool = False
    folders: list[FolderNode] = field(default_factory=list)
    pages: list[PageLink] = field(default_factory=list)
    more: int = 0  # pages not listed


def _own_pages(folder: Folder) -> set[str]:
    return {child.prefix[:-1] for child in folder.folders.values()}


def _node(folder: Folder, path: list[Folder], current: str) -> FolderNode:
    url = doc_path(folder.own_page.name) if folder.own_page else browse_path(folder.prefix)
    node = FolderNode(folder.segment, folder.prefix, url, folder.count)
    if folder not in path:
        return node
    node.open = True
    node.folders = [_node(child, path, current) for child in folder.folders.values()]
    shown = [p for p in folder.pages if p.name not in _own_pages(folder)]
    listed = shown[:MAX_PAGES]
    if current and all(p.name != current for p in listed):
        listed += [p for p in shown[MAX_PAGES:] if p.name == current]
    node.pages = [PageLink(p.title, doc_path(p.name), p.name == current) for p in listed]
    node.more = len(shown) - len(listed)
    return node


def tree_for(tree: SiteTree, name: str) -> list[FolderNode]:
    """One node per host; the host and folders holding `name` open down to it."""
    path = tree.path_to(name)
    return [_node(host, path, name) for host in tree.root.folders.values()]


def folder_json(tree: SiteTree, prefix: str) -> dict[str, Any] | None:
    """One folder's sub-folders and pages, for the tree to open without a page load."""
    folder = tree.folder(prefix)
    if folder is None:
        return None
    node = _node(folder, [folder], "")
    return {
        "prefix": node.prefix,
        "folders": [
            {"label": f.label, "prefix": f.prefix, "url": f.url, "count": f.count}
            for f in node.folders
        ],
        "pages": [{"label": p.label, "url": p.url} for p in node.pages],
        "more": node.more,
        "moreUrl": browse_path(folder.prefix),
    }


def neighbours(tree: SiteTree, name: str) -> tuple[PageLink | None, PageLink | None]:
    """Links to the previous and next page in the same folder."""
    before, after = tree.neighbours(name)
    return (
        PageLink(before.title, doc_path(before.name)) if before else None,
        PageLink(after.title, doc_path(after.name)) if after else None,
    )
