"""The choice of a store's search engine, made once when the store opens (api.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from .api import TextEngine


def engine_for(
    engine: Engine, current: Callable[[], Engine], writer: Callable[[], Connection]
) -> TextEngine:
    """The search engine of the database behind `engine`, chosen once when a store opens.
    `current`: the store's engine at the time of a call (a server resizes it); `writer`: a
    connection that writes."""
    if engine.dialect.name == "postgresql":
        from .postgres.engine import PostgresText

        return PostgresText(current, writer)
    from .sqlite.adapter import SqliteText

    return SqliteText(engine, current)
