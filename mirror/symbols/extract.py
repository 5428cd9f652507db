"""A page's symbols: what its own reference sections define, then what its links and code name.

A pure function of the page, so the store can keep a page's symbols in step with its content
(replacing them in the transaction that writes it) and a whole index is the union of its pages'.
"""

from __future__ import annotations

from . import chrome, pydoc
from .model import Symbol


def extract(name: str, content: str | None) -> list[Symbol]:
    """The symbols page `name` defines or names, one per symbol name, sorted by name.

    When rules disagree the first wins: a page's own headings (typed, with an anchor), then
    links to typed anchors, then the shape of its code.
    """
    if not content:
        return []
    found: dict[str, Symbol] = {}
    for rule in (chrome.page_symbols(name, content), pydoc.page_symbols(name, content)):
        for symbol in rule:
            _keep(found, symbol)
    if "/reference/" in content:  # cheap: most pages link to no reference page
        for symbol in chrome.linked_symbols(content):
            _keep(found, symbol)
    return sorted(found.values())


def _keep(found: dict[str, Symbol], symbol: Symbol) -> None:
    held = found.get(symbol.name)
    # A heading's anchor beats a guess from code for the same name.
    if held is None or (
        held.anchor is None and symbol.anchor is not None and held.document == symbol.document
    ):
        found[symbol.name] = symbol
