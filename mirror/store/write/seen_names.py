"""Names already seen in a stream of any length, in bounded memory.

A Python set of a million resource names holds about 170 MB; put_stream only needs to know
which names of each batch came earlier in the stream (to count duplicates), so the names go
to a private temporary SQLite database instead: its pages beyond a small cache live in a file
the operating system deletes when the connection closes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

# Page cache of the temporary database (KiB): a million names take about 60 MB of pages.
CACHE_KIB = 4 << 10


class SeenNames:
    """Remembers names; `add` says how many of a batch are new."""

    def __init__(self) -> None:
        # "" opens a private, temporary on-disk database (deleted on close).
        self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)
        self._db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("CREATE TABLE seen (name TEXT PRIMARY KEY) WITHOUT ROWID")
        self.count = 0  # distinct names seen

    def add(self, names: Iterable[str]) -> int:
        """Remember `names`; returns how many were not seen before."""
        before = self._db.total_changes
        self._db.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ((n,) for n in names))
        new = self._db.total_changes - before
        self.count += new
        return new

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SeenNames:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
