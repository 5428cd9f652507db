"""A store's generation: a number that changes whenever anyone commits to it (answer caches).

SQLite's `PRAGMA data_version` on a connection of our own changes whenever any OTHER
connection commits, in this process or another (a `dk-mirror fetch` beside a server); the
probe's connection never writes, so every commit shows. Reading it costs a few microseconds
and never waits: the connection has no busy timeout, and a busy or broken read answers None
("cannot tell"), which a cache must treat as a miss. Other databases answer None as well.
"""

from __future__ import annotations

import sqlite3
import threading
from urllib.parse import quote, urlencode

from sqlalchemy import Engine


class GenerationProbe:
    """Reads the generation of one SQLite file through its own read-only connection."""

    def __init__(self, target: str) -> None:
        """`target`: an SQLite URI (file:PATH?mode=ro and any options the store opens with)."""
        self._connection = sqlite3.connect(
            # timeout=0: a lock held this instant answers None at once instead of waiting
            # (the probe runs on a server's event loop, which must never block).
            target,
            uri=True,
            timeout=0,
            isolation_level=None,
            check_same_thread=False,
        )
        self._lock = threading.Lock()  # one sqlite3 connection, callers on any thread

    def __call__(self) -> int | None:
        """The current generation, or None when it cannot be read right now."""
        with self._lock:
            try:
                row = self._connection.execute("PRAGMA data_version").fetchone()
            except sqlite3.Error:
                return None
        return int(row[0]) if row else None

    def close(self) -> None:
        """Close the probe's connection."""
        with self._lock:
            self._connection.close()


def probe_for(engine: Engine) -> GenerationProbe | None:
    """A probe for an SQLite file's engine; None for memory databases and other backends."""
    url = engine.url
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return None
    if "mode=memory" in database:
        return None
    if database.startswith("file:"):  # a read-only store's URI: open it the same way
        options = {k: v for k, v in url.query.items() if k != "uri" and isinstance(v, str)}
    else:
        database, options = "file:" + quote(database), {}
    options["mode"] = "ro"  # the probe only reads, whatever the store's own engine does
    try:
        return GenerationProbe(database + "?" + urlencode(sorted(options.items())))
    except sqlite3.Error:
        return None
