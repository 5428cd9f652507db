"""Plain, frozen records in the shapes of the upstream API, with JSON converters.

No database or HTTP code here: `store/` and `upstream/` translate to and from these.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from .errors import ProtocolError


class View(StrEnum):
    """DocumentView: which fields a Get/BatchGet returns."""

    BASIC = "DOCUMENT_VIEW_BASIC"
    CONTENT = "DOCUMENT_VIEW_CONTENT"
    FULL = "DOCUMENT_VIEW_FULL"


# JSON field name -> attribute name, in the order upstream documents them (and we print them).
_FIELDS: tuple[tuple[str, str], ...] = (
    ("name", "name"),
    ("uri", "uri"),
    ("content", "content"),
    ("description", "description"),
    ("dataSource", "data_source"),
    ("title", "title"),
    ("updateTime", "update_time"),
    ("view", "view"),
    ("contentLengthBytes", "content_length_bytes"),
)
_KNOWN = frozenset(json_name for json_name, _ in _FIELDS)
_STRING_FIELDS = frozenset(j for j, _ in _FIELDS if j != "contentLengthBytes")


def content_sha256(content: str) -> str:
    """Hex sha256 of a document's Markdown as UTF-8."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def data_source_of(name: str) -> str:
    """The `dataSource` of a resource name: its host (`documents/{host}/...`)."""
    return name.split("/", 2)[1] if name.count("/") >= 1 else ""


@dataclass(frozen=True, slots=True)
class Document:
    """A Developer Knowledge Document; `None` means upstream did not send the field."""

    name: str
    uri: str | None = None
    content: str | None = None
    description: str | None = None
    data_source: str | None = None
    title: str | None = None
    update_time: str | None = None
    view: str | None = None
    content_length_bytes: int | None = None
    # Fields upstream sent that this version does not know, kept so nothing is lost.
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_api(cls, data: object) -> Document:
        """Parse one Document JSON object, refusing shapes the contract does not allow."""
        if not isinstance(data, dict):
            raise ProtocolError(f"expected a Document object, got {type(data).__name__}")
        name = data.get("name")
        if not isinstance(name, str) or not name.startswith("documents/"):
            raise ProtocolError(f"Document without a valid `name`: {str(name)[:120]!r}")
        values: dict[str, Any] = {}
        for json_name, attr in _FIELDS[1:]:
            value = data.get(json_name)
            if value is None:
                continue
            if json_name in _STRING_FIELDS and not isinstance(value, str):
                raise ProtocolError(f"{name}: `{json_name}` is not a string")
            if json_name == "contentLengthBytes":
                # int32 in the proto; JSON encoders may send it as a string (int64 style).
                try:
                    value = int(value)
                except (TypeError, ValueError):
                    raise ProtocolError(f"{name}: `contentLengthBytes` is not an integer") from None
            values[attr] = value
        extra = {k: v for k, v in data.items() if k not in _KNOWN}
        return cls(name=name, extra=extra, **values)

    def to_api(self) -> dict[str, Any]:
        """The upstream JSON object, omitting fields that are unset."""
        out: dict[str, Any] = {}
        for json_name, attr in _FIELDS:
            value = getattr(self, attr)
            if value is not None:
                out[json_name] = value
        for key in sorted(self.extra):
            out.setdefault(key, self.extra[key])
        return out

    def basic(self) -> Document:
        """This document in DOCUMENT_VIEW_BASIC: metadata only."""
        return replace(self, content=None, view=View.BASIC.value)

    def in_view(self, view: View) -> Document:
        """This document as upstream would return it in `view`."""
        if view is View.BASIC:
            return self.basic()
        return replace(self, view=view.value) if self.view else self

    def with_derived_fields(self) -> Document:
        """Fill what can be derived when a source omits it (dataSource, contentLengthBytes)."""
        data_source = self.data_source or data_source_of(self.name)
        length = self.content_length_bytes
        if length is None and self.content is not None:
            length = len(self.content.encode("utf-8"))
        return replace(self, data_source=data_source, content_length_bytes=length)


@dataclass(frozen=True, slots=True)
class CachedDocument:
    """A document as the store holds it, with what the mirror knows about the copy."""

    document: Document
    sha256: str | None
    fetched_at: float
    upstream: str
    # Newest updateTime seen in metadata (e.g. search results) since this copy was fetched.
    seen_update_time: str | None = None

    @property
    def name(self) -> str:
        """The document's resource name."""
        return self.document.name
