"""Symbols of the Chrome extension API reference (developer.chrome.com/docs/extensions/reference).

A reference page documents one namespace (`.../reference/storage` is `chrome.storage`,
`.../reference/devtools_panels` is `chrome.devtools.panels`). Its members are found three ways:
the generated "Types / Properties / Methods / Events" sections, when the page has them (each
member an H3 heading); the typed anchors other pages link to (`runtime/#property-lastError`);
and the page's own code, where `chrome.storage.local.get(...)` is a call (a method) on
`chrome.storage.local` (a property) and `chrome.storage.onChanged.addListener` an event.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .headings import headings
from .model import EVENT, METHOD, NAMESPACE, PROPERTY, TYPE, Symbol

HOST = "developer.chrome.com"
_PAGE = re.compile(
    r"^documents/developer\.chrome\.com/docs/(?:extensions|apps)/reference/(?:api/)?([A-Za-z]\w*)$"
)
# A link to a typed anchor of a reference page, relative to the site or absolute.
_LINK = re.compile(
    r"(?:https?://developer\.chrome\.com)?/docs/(extensions|apps)/reference/(api/)?([A-Za-z]\w*)/?"
    r"#(method|event|property|type)-([A-Za-z_$][\w$]*)"
)
_KINDS = {"method": METHOD, "event": EVENT, "property": PROPERTY, "type": TYPE}
# The generated sections' titles and the member type of their H3 headings.
_SECTIONS = {"types": TYPE, "properties": PROPERTY, "methods": METHOD, "events": EVENT}
_ANCHOR_KIND = {TYPE: "type", PROPERTY: "property", METHOD: "method", EVENT: "event"}
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
# `name(`, `name (` and `name<T>(` are calls; what follows a member tells what it is.
_MEMBERS = r"((?:\.[A-Za-z_$][\w$]*)+)(\s*\()?"
_EVENT = re.compile(r"^on[A-Z]")


def namespace_of(name: str) -> str | None:
    """The namespace a reference page documents (`chrome.devtools.panels`), or None."""
    page = _PAGE.match(name)
    return f"chrome.{page.group(1).replace('_', '.')}" if page else None


def page_symbols(name: str, content: str) -> Iterator[Symbol]:
    """The namespace of a reference page and the members its sections and code show."""
    namespace = namespace_of(name)
    if namespace is None:
        return
    yield Symbol(namespace, NAMESPACE, name, None, _parent(namespace))
    yield from _sections(name, namespace, content)
    yield from _code(name, namespace, content)


def linked_symbols(content: str) -> Iterator[Symbol]:
    """Members named by links to typed anchors of reference pages, on any page."""
    for link in _LINK.finditer(content):
        area, api_dir, api, kind, member = link.groups()
        page = f"documents/{HOST}/docs/{area}/reference/{api_dir or ''}{api}"
        namespace = f"chrome.{api.replace('_', '.')}"
        yield Symbol(f"{namespace}.{member}", _KINDS[kind], page, f"{kind}-{member}", namespace)


def _sections(name: str, namespace: str, content: str) -> Iterator[Symbol]:
    kind: str | None = None
    for heading in headings(content):
        if heading.level <= 2:
            kind = _SECTIONS.get(heading.text.casefold()) if heading.level == 2 else None
        elif heading.level == 3 and kind is not None:
            member = heading.text.removeprefix(namespace + ".").split("(", 1)[0].strip()
            if _IDENT.match(member):
                anchor = heading.id or f"{_ANCHOR_KIND[kind]}-{member}"
                yield Symbol(f"{namespace}.{member}", kind, name, anchor, namespace)


def _code(name: str, namespace: str, content: str) -> Iterator[Symbol]:
    kinds: dict[str, str] = {}
    for use in re.finditer(r"\b" + re.escape(namespace) + _MEMBERS, content):
        parts = use.group(1)[1:].split(".")
        called = use.group(2) is not None
        for depth, part in enumerate(parts, 1):
            member = f"{namespace}.{'.'.join(parts[:depth])}"
            if _EVENT.match(part):
                kinds[member] = EVENT  # its members (addListener) are the Event API's
                break
            if part.isupper():
                kinds[member] = PROPERTY  # a constant: MAX_NUMBER_OF_STATIC_RULESETS
                break
            if part[:1].isupper():
                kinds[member] = TYPE  # a type, or a constructor; its members are its own
                break
            if depth == len(parts):
                if called:
                    kinds[member] = METHOD
                # Not called: prose names methods without parentheses too, so what it is
                # stays unknown unless a link, a heading or another use on the page says.
            else:
                kinds.setdefault(member, PROPERTY)  # holds members: storage.local
    for member, kind in kinds.items():
        yield Symbol(member, kind, name, None, namespace)


def _parent(namespace: str) -> str | None:
    parent = namespace.rsplit(".", 1)[0]
    return parent if parent != "chrome" else None
