"""One symbol per name, when several pages name it (its reference page, pages linking to its
anchor): the same choice for the store's lookups and for an export that extracts its own."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Symbol


def best(found: Iterable[tuple[Symbol, str]]) -> list[Symbol]:
    """One symbol per name from (symbol, the page it was read from) pairs, in the order names
    first appear: the one read from the page that documents it, else one with an anchor, else
    the first by page name."""
    chosen: dict[str, tuple[tuple[bool, bool, str], Symbol]] = {}
    for symbol, source in found:
        rank = (source != symbol.document, symbol.anchor is None, symbol.document)
        held = chosen.get(symbol.name)
        if held is None or rank < held[0]:
            chosen[symbol.name] = (rank, symbol)
    return [symbol for _, symbol in chosen.values()]
