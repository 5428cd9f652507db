"""A symbol of the index and the types it can have (Dash's type names, so a docset uses them
as they are)."""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "Namespace"
MODULE = "Module"
CLASS = "Class"
TYPE = "Type"
METHOD = "Method"
FUNCTION = "Function"
EVENT = "Event"
PROPERTY = "Property"
# Every type the extractor gives, in the order a listing of counts shows them.
TYPES = (NAMESPACE, MODULE, CLASS, TYPE, METHOD, FUNCTION, EVENT, PROPERTY)


@dataclass(frozen=True, slots=True, order=True)
class Symbol:
    """An API name, what it is, and where it is documented.

    `document` is the page that documents it (a resource name, which need not be stored yet);
    `anchor` the id of its heading on that page, when the page has one; `parent` the
    namespace, module or class it belongs to (`chrome.storage` for `chrome.storage.local.get`).
    """

    name: str
    type: str
    document: str
    anchor: str | None = None
    parent: str | None = None

    def key(self) -> str:
        """The name as prefix lookups compare it (case folded)."""
        return self.name.casefold()

    def leaf(self) -> str:
        """The last part of the name, case folded: `dense` for `tf.keras.layers.Dense`."""
        return self.name.rsplit(".", 1)[-1].casefold()

    def to_json(self) -> dict[str, str | None]:
        """The symbol as the CLI and the web pages print it."""
        return {
            "name": self.name,
            "type": self.type,
            "document": self.document,
            "anchor": self.anchor,
            "parent": self.parent,
        }
