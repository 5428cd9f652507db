"""The symbol index's writes and reads on a SQLAlchemy connection (schema/symbols.py).

A page's rows are replaced in the transaction that writes the page, so the index is never
behind the documents; `rebuild` derives it from every stored page (migration 0015, and after
the extraction rules change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete, insert, select, text

from ...models import Document
from ...symbols.extract import extract
from ...symbols.model import Symbol
from ..db import symbol_sql
from ..schema.symbols import symbols
from ..schema.tables import documents

# Names per DELETE ... IN: within SQLite's variable limit.
_CHUNK = 500


def rows_of(name: str, content: str | None) -> list[dict[str, Any]]:
    """The rows of page `name`'s symbols."""
    return [
        {
            "source": name,
            "name": s.name,
            "type": s.type,
            "document": s.document,
            "anchor": s.anchor,
            "parent": s.parent,
            "key": s.key(),
            "leaf": s.leaf(),
        }
        for s in extract(name, content)
    ]


def replace(
    conn: Connection,
    docs: Sequence[Document],
    ready: Mapping[str, list[dict[str, Any]]] | None = None,
) -> None:
    """Make the rows of `docs` those their content gives now (none for a page without);
    `ready`: rows already derived, by page name (the others are derived here)."""
    ready = ready or {}
    names = [doc.name for doc in docs]
    for start in range(0, len(names), _CHUNK):
        part = names[start : start + _CHUNK]
        conn.execute(delete(symbols).where(symbols.c.source.in_(part)))
    rows = [
        row
        for doc in docs
        for row in (ready[doc.name] if doc.name in ready else rows_of(doc.name, doc.content))
    ]
    if rows:
        conn.execute(insert(symbols), rows)


def rebuild(conn: Connection) -> int:
    """Derive every page's rows again from the stored documents; returns how many rows."""
    conn.execute(delete(symbols))
    query = (
        select(documents.c.name, documents.c.content)
        .where(documents.c.content.is_not(None))
        .order_by(documents.c.name)
        .limit(_CHUNK)
    )
    written, after = 0, ""
    # A page of documents at a time, by name: memory holds one page, and no cursor stays
    # open on the connection the rows are inserted on.
    while True:
        pages = conn.execute(query.where(documents.c.name > after)).all()
        if not pages:
            return written
        written += _insert(conn, [row for name, content in pages for row in rows_of(name, content)])
        after = pages[-1][0]


def _insert(conn: Connection, rows: list[dict[str, Any]]) -> int:
    if rows:
        conn.execute(insert(symbols), rows)
    return len(rows)


def exact(conn: Connection, name: str) -> Symbol | None:
    """The symbol called `name` (case folded) whose page is stored, or None."""
    found = symbol_sql.best(conn.execute(text(symbol_sql.EXACT), {"key": name.strip().casefold()}))
    return found[0] if found else None


def lookup(conn: Connection, prefix: str, limit: int) -> list[Symbol]:
    """Up to `limit` symbols whose name, or else whose last part, starts with `prefix`."""
    params = symbol_sql.prefix_params(prefix, limit)
    by_key = conn.execute(text(symbol_sql.BY_KEY), params).all()
    wanted = symbol_sql.wants_leaf(by_key, limit)
    by_leaf = conn.execute(text(symbol_sql.BY_LEAF), params).all() if wanted else []
    return symbol_sql.merged(by_key, by_leaf, limit)


def every(conn: Connection) -> list[Symbol]:
    """Every symbol whose page is stored, one per name, by name."""
    return symbol_sql.best(conn.execute(text(symbol_sql.ALL)))
