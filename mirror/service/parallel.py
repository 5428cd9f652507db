"""Upstream batches in flight at once, their results handed back on the calling thread."""

from __future__ import annotations

from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

T = TypeVar("T")


def in_parallel(
    batches: list[list[str]],
    call: Callable[[list[str]], T],
    concurrency: int,
    name: str,
    stopping: Callable[[], bool] = lambda: False,
) -> Generator[tuple[list[str], T | Exception], None, None]:
    """Yield (batch, result or exception) as calls finish, at most `concurrency` in flight.

    With one worker the calls run on this thread. Once `stopping()` is true no more calls
    start; those in flight are still yielded. On Ctrl-C the calls not started are dropped and
    the generator does not wait for those in flight (their threads end with their call).
    `name` prefixes the worker threads' names (they show in a profiler or a thread dump).
    """
    if concurrency == 1:
        for batch in batches:
            if stopping():
                return
            try:
                yield batch, call(batch)
            except Exception as exc:  # handed to the caller with its batch
                yield batch, exc
        return
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=name)
    pending: dict[Future[T], list[str]] = {}
    queue = iter(batches)
    finished = False
    try:
        for batch in queue:
            pending[pool.submit(call, batch)] = batch
            if len(pending) >= concurrency:
                break
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                batch = pending.pop(future)
                failure = future.exception()
                if failure is not None and not isinstance(failure, Exception):
                    raise failure  # KeyboardInterrupt, SystemExit: not a batch's result
                yield batch, (failure if failure is not None else future.result())
                following = None if stopping() else next(queue, None)
                if following is not None:
                    pending[pool.submit(call, following)] = following
        finished = True
    finally:
        pool.shutdown(wait=finished, cancel_futures=True)
