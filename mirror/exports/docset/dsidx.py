"""docSet.dsidx: the SQLite search index Dash and Zeal read (`searchIndex(id, name, type,
path)`), written to the same bytes for the same entries (sorted, one transaction, no
timestamps: SQLite's header counters depend only on the statements run)."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path

_SCHEMA = (
    "CREATE TABLE searchIndex(id INTEGER PRIMARY KEY, name TEXT, type TEXT, path TEXT)",
    # Dash's own docsets carry this index; it also refuses an entry written twice.
    "CREATE UNIQUE INDEX anchor ON searchIndex (name, type, path)",
)


def dsidx_bytes(entries: Iterable[tuple[str, str, str]]) -> bytes:
    """The index file holding (name, type, path) `entries`, duplicates dropped, sorted."""
    rows = sorted(set(entries))
    with tempfile.TemporaryDirectory(prefix="dk-docset-") as folder:
        path = Path(folder) / "docSet.dsidx"
        db = sqlite3.connect(path)
        try:
            # A rollback journal (not WAL): the file alone is the whole database.
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("PRAGMA page_size=4096")
            with db:
                for statement in _SCHEMA:
                    db.execute(statement)
                db.executemany("INSERT INTO searchIndex (name, type, path) VALUES (?, ?, ?)", rows)
        finally:
            db.close()
        return path.read_bytes()
