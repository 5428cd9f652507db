"""The Store's symbol index (tables/symbols.py): lookups, and a rebuild from the documents.

A mixin of Store (store.py), kept apart as Searching is: it works on the Store's own engine
and writer, declared below. Writes keep the index current by themselves (Store._write_prepared).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from ..symbols.model import Symbol


class SymbolIndex:
    """The typed symbol index of a Store."""

    # The Store's (store.py).
    engine: Engine
    _writer: Callable[[], Connection]

    def symbol_exact(self, name: str) -> Symbol | None:
        """The symbol called `name` (case folded) whose page is stored, or None."""
        from .tables import symbols

        with self.engine.connect() as conn:
            return symbols.exact(conn, name)

    def symbol_lookup(self, prefix: str, limit: int) -> list[Symbol]:
        """Up to `limit` symbols whose name, or else whose last part, starts with `prefix`."""
        from .tables import symbols

        with self.engine.connect() as conn, conn.begin():  # both lookups on one snapshot
            return symbols.lookup(conn, prefix, limit)

    def symbol_list(self) -> list[Symbol]:
        """Every symbol whose page is stored, one per name, by name."""
        from .tables import symbols

        with self.engine.connect() as conn:
            return symbols.every(conn)

    def rebuild_symbols(self) -> int:
        """Derive the symbol index from the documents again, in one transaction; its rows."""
        from .db import turns
        from .tables import symbols

        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                rows = symbols.rebuild(conn)
        return rows
