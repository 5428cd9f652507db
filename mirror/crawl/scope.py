"""Which document names a crawl may follow links to."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Scope:
    """Where links may lead: names starting with a prefix, or inside a seed's tree.

    `prefixes` match as plain string prefixes of canonical names, as `ls --prefix` and a
    `dk-mirror.toml` prefix do. `trees` are document names: the page and everything below it
    (`documents/h/docs/a` holds `documents/h/docs/a/b`, not `documents/h/docs/ab`); a crawl
    with no --prefix stays inside its seeds' trees.
    """

    prefixes: tuple[str, ...] = ()
    trees: tuple[str, ...] = ()

    @classmethod
    def of(cls, prefixes: Iterable[str], seeds: Iterable[str]) -> Scope:
        """The scope of a crawl: its prefixes if any were given, else its seeds' trees."""
        given = tuple(dict.fromkeys(prefixes))
        return cls(prefixes=given) if given else cls(trees=tuple(dict.fromkeys(seeds)))

    def contains(self, name: str) -> bool:
        """True if a link to `name` may be followed."""
        if any(name.startswith(p) for p in self.prefixes):
            return True
        return any(name == t or name.startswith(t + "/") for t in self.trees)

    def to_json(self) -> dict[str, list[str]]:
        """As the crawl's description records it."""
        return {"prefixes": list(self.prefixes), "trees": list(self.trees)}
