"""Doing a format's CPU-heavy step (rendering HTML) on every core, results kept in order.

A pool of forked processes: forked, so each starts with the parent's state (the renderer and the
set of exported names) without pickling it; in order, so the export's bytes and its writes stay
deterministic; a bounded window of work in flight, so memory does not grow with the corpus.
Workers ignore SIGINT: Ctrl-C is the parent's to handle. When the parent stops early (Ctrl-C,
an error) it terminates them at once: a forked worker holds both ends of its task pipe, so it
would never see the parent go, and would outlive it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections import deque
from collections.abc import Callable, Generator, Iterable
from multiprocessing.pool import AsyncResult
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


def ordered_map(
    func: Callable[[In], Out], items: Iterable[In], *, workers: int
) -> Generator[Out, None, None]:
    """`func` of each item, in order; on `workers` forked processes when there are two or
    more and the platform forks, else here (func must then be a module-level function).
    Close it (contextlib.closing) when stopping early, so the workers stop at once."""
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(func, items)
        return
    pool = multiprocessing.get_context("fork").Pool(workers, initializer=_quiet)
    pending: deque[AsyncResult[Out]] = deque()
    finished = False
    try:
        for item in items:
            pending.append(pool.apply_async(func, (item,)))
            if len(pending) >= workers * AHEAD:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
        finished = True
    finally:
        if finished:
            pool.close()  # all done: let the workers exit on their own
        else:
            pool.terminate()  # Ctrl-C or an error: drop the work in flight, stop the workers
        pool.join()
