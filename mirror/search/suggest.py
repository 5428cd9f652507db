"""Nearest cached documents for a name the store lacks: same path prefix first, then spelling.

Pure ranking; the service gathers the candidates (names under the missing name's parents).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from .. import names as naming


def parents(name: str) -> list[str]:
    """Listing prefixes for `name`, deepest first: `documents/h/a/b/`, `documents/h/a/`, `documents/h/`."""
    segments = name[len(naming.PREFIX) :].split("/")
    return [
        naming.PREFIX + "/".join(segments[:depth]) + "/"
        for depth in range(len(segments) - 1, 0, -1)
    ]


def host_of(name: str) -> str:
    """The host part of a canonical name."""
    return name[len(naming.PREFIX) :].split("/", 1)[0]


def close_hosts(host: str, hosts: Iterable[str], limit: int = 2) -> list[str]:
    """Hosts spelled like `host` (a typo in the host still finds the right site)."""
    return difflib.get_close_matches(host, list(hosts), n=limit, cutoff=0.6)


def _shared_segments(a: list[str], b: list[str]) -> int:
    count = 0
    for left, right in zip(a, b, strict=False):
        if left != right:
            break
        count += 1
    return count


def nearest(
    name: str, candidates: Iterable[str], limit: int = 3, exclude: Iterable[str] = ()
) -> list[str]:
    """The `limit` candidates closest to `name`: most shared path segments, then spelling."""
    skip = {name, *exclude}
    target = name[len(naming.PREFIX) :]
    target_segments = target.split("/")
    scored = []
    for candidate in dict.fromkeys(candidates):
        if candidate in skip:
            continue
        path = candidate[len(naming.PREFIX) :]
        shared = _shared_segments(target_segments, path.split("/"))
        spelling = difflib.SequenceMatcher(None, target, path).ratio()
        scored.append((-shared, -spelling, candidate))
    scored.sort()
    return [candidate for _, _, candidate in scored[:limit]]
