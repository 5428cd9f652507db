"""Symbols of Python API reference pages generated from docstrings, as TensorFlow's are
(www.tensorflow.org/api_docs/python/tf/keras/layers/Dense): the page's title is the symbol's
full name, a class page lists its methods as H3 headings under "Methods"."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .headings import headings
from .model import CLASS, FUNCTION, METHOD, MODULE, Symbol

_PAGE = re.compile(r"^documents/[^/]+/(?:[^/]+/)*api_docs/python/")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_IDENT = re.compile(r"^[A-Za-z_]\w*$")
# A module page lists what it holds under these H2 headings.
_MODULE_SECTIONS = frozenset({"modules", "classes", "functions", "other members", "type aliases"})


def page_symbols(name: str, content: str) -> Iterator[Symbol]:
    """The page's symbol (a class, function or module) and a class's methods."""
    if not _PAGE.match(name):
        return
    found = list(headings(content))
    title = next((h.text for h in found if h.level == 1), "")
    if not _DOTTED.match(title):
        return
    sections = {h.text.casefold() for h in found if h.level == 2}
    parent = title.rsplit(".", 1)[0]
    if title.rsplit(".", 1)[1][:1].isupper():
        kind = CLASS
    else:
        kind = MODULE if sections & _MODULE_SECTIONS else FUNCTION
    yield Symbol(title, kind, name, None, parent)
    if kind != CLASS:
        return
    in_methods = False
    for heading in found:
        if heading.level <= 2:
            in_methods = heading.level == 2 and heading.text.casefold() == "methods"
        elif heading.level == 3 and in_methods:
            method = heading.text.split("(", 1)[0].strip()
            if _IDENT.match(method):
                yield Symbol(f"{title}.{method}", METHOD, name, heading.id or method, title)
