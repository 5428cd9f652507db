"""Keeps an SQLite store's tantivy index in step with its commits, on a thread of its own.

Searches sync the index themselves before they search (text_index.py), so this only keeps
that cheap: after a commit, the pages it changed are indexed in the background instead of by
the next search. A change it misses (a commit it was not told of, a process that exited
first) is still found by the next search or write, through the change log.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from ....errors import MirrorError
from .index import TextIndex

log = logging.getLogger("mirror.store")

# After a commit, wait this long for more before indexing: a crawl commits a group every few
# tenths of a second, and one sync of several groups costs about what one of a group does.
DELAY = 1.0
# Below the index's last id: that row stays, for TextIndex._diverged to compare.
_PRUNE = "DELETE FROM search_changes WHERE id < ?"
# The log is pruned once it holds this many changes the index has applied: a prune is a commit,
# which ends every cache kept per store generation (a server's answers), so not after each sync.
PRUNE_AT = 10_000
_PRUNABLE = "SELECT count(*) FROM (SELECT 1 FROM search_changes WHERE id < ? LIMIT ?)"


class Indexer:
    """Syncs `index` after commits, on a daemon thread started at the first `poke`."""

    def __init__(self, index: TextIndex, connect: Callable[[], Any]) -> None:
        self._index = index
        self._connect = connect  # a pooled DBAPI connection (closed = returned to the pool)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def poke(self) -> None:
        """A commit is landing: sync soon."""
        with self._lock:
            if self._stopping:
                return
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="dk-mirror-indexer", daemon=True
                )
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            # Let the commit that poked land, and any that follow it (close() syncs itself).
            if self._stop.wait(DELAY):
                return
            self._wake.clear()
            try:
                self.sync_now()
            except MirrorError as exc:  # a known failure (a full disk): its message says it
                log.warning("indexing the store's changes failed; searches will retry: %s", exc)
            except Exception:
                log.warning(
                    "indexing the store's changes failed; searches will retry", exc_info=True
                )
            if self._stop.is_set():
                return

    def sync_now(self) -> int:
        """Sync the index with the store's last commit, in this thread, then prune the log of
        the changes it holds."""
        pooled = self._connect()
        try:
            raw = pooled.driver_connection
            raw.execute("BEGIN")
            try:
                count = self._index.sync(raw)
            finally:
                raw.execute("COMMIT")
            self._prune(raw)
            return count
        finally:
            pooled.close()

    def _prune(self, raw: Any) -> None:
        # Without the index held: a writer waiting for the index may hold the store's write
        # lock, and this waits for that lock. A change pruned here is in the index already; a
        # second index of this store (a read-only copy's, in the cache folder) that had not
        # applied it finds the gap and rebuilds.
        seq = self._index.state()
        if not seq or raw.execute(_PRUNABLE, (seq, PRUNE_AT)).fetchone()[0] < PRUNE_AT:
            return
        try:
            raw.execute("BEGIN IMMEDIATE")
            try:
                raw.execute(_PRUNE, (seq,))
            finally:
                raw.execute("COMMIT")
        except sqlite3.OperationalError:  # busy or read-only: the next sync prunes instead
            log.debug("could not prune the search change log", exc_info=True)

    def close(self) -> None:
        """Stop the thread, after the sync under way (if any) and one last one."""
        with self._lock:
            self._stopping = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._wake.set()
            thread.join()
            with contextlib.suppress(Exception):
                self.sync_now()
