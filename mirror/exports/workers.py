"""Doing a format's CPU-heavy step (rendering HTML) on every core, results kept in order.

A pool of forked processes: forked, so each starts with the parent's state (the renderer and the
set of exported names) without pickling it; in order, so the export's bytes and its writes stay
deterministic; a bounded window of work in flight, so memory does not grow with the corpus.
Workers ignore SIGINT: Ctrl-C is the parent's to handle, and it drops the work in flight.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

In = TypeVar("In")
Out = TypeVar("Out")

# Items handed out ahead of the one being written, per worker.
AHEAD = 16


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _quiet() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def ordered_map(func: Callable[[In], Out], items: Iterable[In], *, workers: int) -> Iterator[Out]:
    """`func` of each item, in order; on `workers` forked processes when there are two or
    more and the platform forks, else here (func must then be a module-level function)."""
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(func, items)
        return
    pool = ProcessPoolExecutor(workers, multiprocessing.get_context("fork"), initializer=_quiet)
    pending: deque[Future[Out]] = deque()
    try:
        for item in items:
            pending.append(pool.submit(func, item))
            if len(pending) >= workers * AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        # Ctrl-C or an error: what is still queued is dropped, not waited for.
        pool.shutdown(wait=False, cancel_futures=True)
