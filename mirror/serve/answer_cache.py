"""Documents a read-only server has answered with, kept while the store is unchanged.

Reading 20 documents back from SQLite and encoding them as JSON cost several times what
sending the answer does (bench/bench_serve.py), and a server is asked for the same documents
again and again. Each entry is valid for one store generation (Mirror.store_generation: it
changes whenever anyone commits, in this process or another), so a write is never hidden:

- a request reads the generation first; a changed one empties the cache;
- a hit is served only for the generation just read;
- a miss is answered from the store as usual, then kept under the generation read BEFORE
  the store was read, and only if that is still the current one. An answer that saw a newer
  write than its generation is harmless: every request that can be served it began before
  that write was visible, so it may see the write or not.

Only for servers that never fetch: a fetching server's answers also depend on the clock
(freshness) and upstream, not only on the store. Memory is bounded (least recently used go).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..limits import MAX_NAMES
from ..models import Document, View

if TYPE_CHECKING:
    from ..service.documents import Served

# Bytes of documents (and their encoded JSON) kept at most: the ~2,000-page corpus fits twice.
DEFAULT_MAX_BYTES = 128 << 20


@dataclass(slots=True)
class _Entry:
    document: Document
    size: int
    encoded: dict[View, bytes] = field(default_factory=dict)  # REST JSON by view
    served: Served | None = None  # where the copy came from and when (provenance)


class AnswerCache:
    """Documents by the name a client asked for, valid for one store generation."""

    def __init__(
        self, generation: Callable[[], int | None], max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        self._read_generation = generation
        self._generation: int | None = None
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes
        self._lock = threading.Lock()

    def generation(self) -> int | None:
        """The store's generation now (None: cannot tell); forgets everything if it changed."""
        current = self._read_generation()
        with self._lock:
            if current != self._generation:
                self._entries.clear()
                self._bytes = 0
                self._generation = current
        return current

    def documents(self, names: Sequence[str], generation: int | None) -> list[Document] | None:
        """The documents for `names` in order, if every one is kept for `generation`."""
        entries = self._lookup(names, generation)
        return None if entries is None else [e.document for e in entries]

    def encoded(
        self, names: Sequence[str], view: View, generation: int | None
    ) -> list[bytes] | None:
        """The JSON of each document for `names` in `view`, if every one is kept already."""
        entries = self._lookup(names, generation)
        if entries is None:
            return None
        out = []
        for entry in entries:
            data = entry.encoded.get(view)
            if data is None:
                return None
            out.append(data)
        return out

    def keep(
        self,
        names: Sequence[str],
        documents: Sequence[Document],
        generation: int | None,
        view: View | None = None,
        encoded: Sequence[bytes] = (),
        served: Sequence[Served] = (),
    ) -> None:
        """Remember `documents` (one per name, in order) as read at `generation`, with their
        JSON in `view` when given; ignored if the store has changed since."""
        if generation is None or len(names) != len(documents):
            return
        with self._lock:
            if generation != self._generation:
                return  # written since: this answer may be older than the store
            for i, (name, doc) in enumerate(zip(names, documents, strict=True)):
                entry = self._entries.get(name)
                if entry is None or entry.document != doc:
                    if entry is not None:
                        self._bytes -= entry.size
                    entry = _Entry(doc, len(doc.content or "") + len(name))
                    self._entries[name] = entry
                    self._bytes += entry.size
                if i < len(served):
                    entry.served = served[i]
                if view is not None and i < len(encoded) and view not in entry.encoded:
                    entry.encoded[view] = encoded[i]
                    entry.size += len(encoded[i])
                    self._bytes += len(encoded[i])
            while self._bytes > self.max_bytes and self._entries:
                _name, oldest = self._entries.popitem(last=False)
                self._bytes -= oldest.size

    def served(self, names: Sequence[str], generation: int | None) -> list[Served] | None:
        """Where each kept document for `names` came from, if every one is kept with it."""
        entries = self._lookup(names, generation)
        if entries is None or any(e.served is None for e in entries):
            return None
        return [e.served for e in entries if e.served is not None]

    def _lookup(self, names: Sequence[str], generation: int | None) -> list[_Entry] | None:
        # More than a batch, or none, is an error the store path reports; never a hit.
        if generation is None or not 0 < len(names) <= MAX_NAMES:
            return None
        with self._lock:
            if generation != self._generation:
                return None
            entries = self._entries
            found = []
            for name in names:
                entry = entries.get(name)
                if entry is None:
                    return None
                found.append(entry)
            for name in names:
                entries.move_to_end(name)
            return found
