"""Bringing back an index that cannot be used as it is: damaged files, or a folder that
describes another store or a later state of this one (index.TextIndex decides; this holds the
parts that do not need the index itself).

A command (a CLI search) rebuilds in its own thread and then answers: an empty answer from an
index being rebuilt would look real to a script. A server cannot make a request wait that long
(a rebuild of 1,000,000 pages takes minutes), so it rebuilds on a thread of its own and each
search waits a few seconds for it, then says the index is rebuilding (IndexRebuilding: 503
with Retry-After on REST, a tool error on MCP).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from ....errors import IndexRebuilding, MirrorError, StoreError

log = logging.getLogger("mirror.store")

# How long a server's search waits for a rebuild under way before it answers 503.
REBUILD_WAIT = 5.0
# What a server tells a client to wait before it searches again (Retry-After, seconds).
RETRY_AFTER = 5
_SEQ = "SELECT seq FROM sqlite_sequence WHERE name = 'search_changes'"


def latest_seq(raw: Any) -> int | None:
    """The id of the store's last logged change as committed now, seen from a connection of
    its own (outside `raw`'s read snapshot); None when it cannot tell (no file, unreadable)."""
    files = raw.execute("PRAGMA database_list").fetchall()
    path = next((file for _, name, file in files if name == "main"), "")
    if not path:
        return None
    try:
        # Read-only: this is a look, and the store may be on a read-only volume.
        other = sqlite3.connect(f"file:{quote(path)}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return None
    try:
        with contextlib.closing(other):
            row = other.execute(_SEQ).fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row else 0


class _Run:
    """One repair on its thread: set `done` when it ends, with its `error` if it failed."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread: threading.Thread | None = None

    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()


class BackgroundRepair:
    """A server's rebuilds: one at a time, on a thread of its own, each search waiting a little.

    `connect` gives a pooled DBAPI connection of the store (closed = returned to the pool);
    `repair(raw)` brings the index up to date reading the store through it."""

    def __init__(
        self, connect: Callable[[], Any], repair: Callable[[Any], object], wait: float
    ) -> None:
        self._connect = connect
        self._repair = repair
        self.wait = wait
        self._lock = threading.Lock()
        self._run: _Run | None = None

    def await_repair(self) -> None:
        """Start the repair unless one is under way, and wait for it up to `wait` seconds;
        IndexRebuilding when it is still running then, its own error if it failed."""
        with self._lock:
            run = self._run
            if run is None or not run.running():
                run = self._run = _Run()
                run.thread = threading.Thread(
                    target=self._repairing, args=(run,), name="dk-mirror-reindex", daemon=True
                )
                run.thread.start()
        if not run.done.wait(self.wait):
            raise IndexRebuilding(
                "the local search index is being rebuilt from the stored documents",
                retry_after=RETRY_AFTER,
                hint=f"search again in {RETRY_AFTER} seconds",
            )
        if isinstance(run.error, MirrorError):  # a known failure (a full disk): it says what
            raise run.error
        if run.error is not None:
            raise StoreError(f"rebuilding the search index failed: {run.error}") from run.error

    def _repairing(self, run: _Run) -> None:
        try:
            pooled = self._connect()
            try:
                raw = pooled.driver_connection
                raw.execute("BEGIN")  # one read snapshot for the whole rebuild
                try:
                    self._repair(raw)
                finally:
                    raw.execute("COMMIT")
            finally:
                pooled.close()
        except BaseException as exc:  # reported to the searches waiting for it
            log.warning("rebuilding the search index failed: %s", exc)
            run.error = exc
        finally:
            run.done.set()
