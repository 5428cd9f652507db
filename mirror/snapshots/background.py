"""Compress in a second thread: a snapshot's lines are built on one core while gzip packs them
on the other.

gzip at level 9 is three quarters of an export's time, and zlib releases the GIL while it
compresses, so handing it blocks of half a MiB from a thread lets the JSON encoding, hashing and
store reads of the next block run meanwhile. The bytes are the same as writing straight to the
GzipFile: deflate's output depends on the data, not on how it is split between calls.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Protocol

# Bytes gathered before a block goes to the compressing thread (half a MiB: the blocks waiting,
# being filled and being packed stay about 2.5 MiB, far below tests/test_scale.py's bound).
BLOCK = 1 << 19
# Blocks waiting for it: memory stays a few MiB whatever the size of the snapshot.
WAITING = 2


class Sink(Protocol):
    """Where the blocks go (a GzipFile)."""

    def write(self, data: bytes, /) -> int:
        """Write `data`."""


class BackgroundWriter:
    """A write-only file object whose writes reach `target` from a thread of its own.

    Errors raised by `target` surface at the next `write` or at `close`.
    """

    def __init__(self, target: Sink) -> None:
        self.target = target
        self._pending = bytearray()
        self._blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=WAITING)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="dk-mirror-gzip", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (block := self._blocks.get()) is not None:
            if self._error is None:
                try:
                    self.target.write(block)
                except BaseException as exc:  # raised in the writer's thread (_raise)
                    self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def write(self, data: bytes) -> int:
        """Queue `data`; a full block is handed to the compressing thread."""
        self._raise()
        self._pending += data
        if len(self._pending) >= BLOCK:
            self._blocks.put(bytes(self._pending))
            self._pending.clear()
        return len(data)

    def close(self) -> None:
        """Write what is pending and wait until the thread has written everything."""
        if self._thread.is_alive():
            if self._pending and self._error is None:
                self._blocks.put(bytes(self._pending))
                self._pending.clear()
            self._blocks.put(None)  # the end
            self._thread.join()
        self._raise()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
