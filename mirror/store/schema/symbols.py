"""The symbol index: the API names each stored page defines or names (mirror/symbols/).

Rows belong to the page they were read from (`source`), so writing a page replaces exactly
its rows in the same transaction, and deleting it deletes them (ON DELETE CASCADE). A name
may come from several pages (its reference page and pages linking to its anchor); readers
pick one row per name (db/symbol_sql.py).
"""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, String, Table

from .tables import NAME, metadata

symbols = Table(
    "symbols",
    metadata,
    Column(
        "source",
        NAME,
        ForeignKey("documents.name", ondelete="CASCADE", name="fk_symbols_source"),
        primary_key=True,
    ),
    # The full name (`chrome.storage.local.get`) and its type, a Dash type name (`Method`).
    Column("name", NAME, primary_key=True),
    Column("type", String(20), nullable=False),
    # The page documenting it (need not be stored: only names whose page is are shown), the
    # id of its heading there, and the namespace, module or class it belongs to.
    Column("document", NAME, nullable=False),
    Column("anchor", String(500)),
    Column("parent", NAME),
    # The name and its last part case folded, for prefix lookups: a range scan of an index in
    # its order, stopping after the rows wanted (NAME's "C" collation on PostgreSQL makes the
    # range and the order those of code points, as on SQLite).
    Column("key", NAME, nullable=False),
    Column("leaf", NAME, nullable=False),
    Index("ix_symbols_key", "key"),
    Index("ix_symbols_leaf", "leaf", "key"),
)
