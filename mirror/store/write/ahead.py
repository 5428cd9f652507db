"""Items of an iterable produced by a thread of their own, a bounded number ahead of the reader.

An import parses its file and prepares each batch (hashes, rows, index text) in Python while
the writer waits on SQLite, which releases the GIL while it indexes: run in two threads the two
overlap, on two cores. The queue holds at most `depth` items, so memory stays bounded whatever
the input's size. An exception in the producing thread is raised in the reading thread at the
point where its item would have come (the writer's transaction then rolls back); leaving the
`with` block early, normally or by an exception, stops the producer and waits for it. With
`depth` 0 there is no thread: the reader produces each item as it iterates (for a source that
must stay in one thread, such as one reading an in-memory SQLite database).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from types import TracebackType
from typing import Generic, TypeVar

T = TypeVar("T")

# How often a producer blocked on a full queue checks whether the reader has gone.
_POLL_SECONDS = 0.1
_ITEM, _ERROR, _DONE = range(3)


class Ahead(Generic[T]):
    """`with Ahead(source, depth) as items: for item in items: ...`"""

    def __init__(self, source: Iterable[T], depth: int, *, name: str = "ahead") -> None:
        if depth < 0:
            raise ValueError("depth must be 0 (no thread) or more")
        self._source = source
        self._queue: queue.Queue[tuple[int, object]] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if depth:
            self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Ahead[T]:
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._thread is None:
            close_source(self._source)
            return
        self._stop.set()
        # Free a producer blocked on a full queue now rather than at its next poll.
        while True:
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._thread.join()

    def __iter__(self) -> Iterator[T]:
        if self._thread is None:
            yield from self._source
            return
        while True:
            kind, value = self._queue.get()
            if kind == _DONE:
                return
            if kind == _ERROR:
                assert isinstance(value, BaseException)
                raise value
            yield value  # type: ignore[misc]  # an _ITEM entry holds a T

    def _run(self) -> None:
        items = iter(self._source)
        try:
            for item in items:
                if not self._put(_ITEM, item):
                    return
        except BaseException as exc:  # handed to the reader, raised there
            self._put(_ERROR, exc)
            return
        finally:
            close_source(items)  # by the thread that ran it
        self._put(_DONE, None)

    def _put(self, kind: int, value: object) -> bool:
        # False once the reader has left: the producer then stops.
        while not self._stop.is_set():
            try:
                self._queue.put((kind, value), timeout=_POLL_SECONDS)
                return True
            except queue.Full:
                continue
        return False


def close_source(items: object) -> None:
    """Close a generator (an open file, a pooled connection) left before its end, now rather
    than whenever the garbage collector gets to it."""
    close = getattr(items, "close", None)
    if close is not None:
        close()
