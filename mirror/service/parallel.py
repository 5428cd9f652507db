"""Upstream batches in flight at once, their results handed back on the calling thread.

At most `concurrency` calls hold a slot (are being sent or answered) at once. A call waiting
for its retry (a 503's backoff, a 429's Retry-After) gives its slot up for the wait, so the
batches behind it go meanwhile instead of queueing behind the wait: with a tenth of requests
failing, the waits had been most of a fetch's time. Back from its wait, a call takes the next
free slot before any batch not yet started, so it is not starved by them either.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Generic, TypeVar

from .. import interrupts
from ..upstream.parking import parking

T = TypeVar("T")

# Threads per slot: how many calls may be started, counting those parked in a retry wait.
THREADS_PER_SLOT = 4


def in_parallel(
    batches: list[list[str]],
    call: Callable[[list[str]], T],
    concurrency: int,
    name: str,
    stopping: Callable[[], bool] = lambda: False,
) -> Generator[tuple[list[str], T | Exception], None, None]:
    """Yield (batch, result or exception) as calls finish, at most `concurrency` in flight.

    With one worker the calls run on this thread (and a retry wait holds up the rest). Once
    `stopping()` is true no more calls start; those in flight are still yielded. On Ctrl-C
    the calls not started are dropped and the generator does not wait for those in flight
    (their threads end with their call). `name` prefixes the worker threads' names (they show
    in a profiler or a thread dump).
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
    yield from _Slots(batches, call, concurrency, name, stopping).run()


class _Slots(Generic[T]):
    """One in_parallel run: this thread decides which call may use a slot, workers ask."""

    def __init__(
        self,
        batches: list[list[str]],
        call: Callable[[list[str]], T],
        concurrency: int,
        name: str,
        stopping: Callable[[], bool],
    ) -> None:
        self.queue = iter(batches)
        self.call = call
        self.concurrency = concurrency
        self.threads = concurrency * THREADS_PER_SLOT
        self.stopping = stopping
        self.pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix=name)
        # What workers tell this thread: a call finished, parked, or is back from its wait.
        self.events: queue.Queue[tuple[str, object]] = queue.Queue()
        self.pending: dict[Future[T], list[str]] = {}
        self.back: deque[threading.Event] = deque()  # calls back from a wait, first come first
        self.active = 0  # calls holding a slot
        self.closing = False
        self.lock = threading.Lock()

    def run(self) -> Generator[tuple[list[str], T | Exception], None, None]:
        finished = False
        try:
            self.fill()
            while self.pending:
                kind, item = interrupts.take(self.events)  # Ctrl-C heard meanwhile
                if kind == "parked":
                    self.active -= 1
                elif kind == "back":
                    assert isinstance(item, threading.Event)
                    self.back.append(item)
                else:
                    done: Future[T] = item  # type: ignore[assignment]
                    batch = self.pending.pop(done)
                    self.active -= 1
                    failure = done.exception()
                    if failure is not None and not isinstance(failure, Exception):
                        raise failure  # KeyboardInterrupt, SystemExit: not a batch's result
                    yield batch, (failure if failure is not None else done.result())
                self.fill()
            finished = True
        finally:
            self.release_all()
            self.pool.shutdown(wait=finished, cancel_futures=True)

    def fill(self) -> None:
        """Give free slots to calls back from a wait first, then to batches not yet started."""
        while self.back and self.active < self.concurrency:
            self.back.popleft().set()
            self.active += 1
        while self.active < self.concurrency and len(self.pending) < self.threads:
            following = None if self.stopping() else next(self.queue, None)
            if following is None:
                return
            future: Future[T] = self.pool.submit(self.work, following)
            self.pending[future] = following
            self.active += 1
            future.add_done_callback(lambda done: self.events.put(("done", done)))

    def work(self, batch: list[str]) -> T:
        with parking(self.parked):
            return self.call(batch)

    @contextmanager
    def parked(self) -> Iterator[None]:
        """A worker's retry wait: its slot is free meanwhile; it waits for one after."""
        self.events.put(("parked", None))
        yield
        turn = threading.Event()
        with self.lock:
            if self.closing:
                return  # the run is over: nobody hands out slots any more
            self.events.put(("back", turn))
        turn.wait()

    def release_all(self) -> None:
        """Let every worker waiting for a slot go on (the run ended early, e.g. Ctrl-C)."""
        with self.lock:
            self.closing = True
        for turn in self.back:
            turn.set()
        while True:
            try:
                kind, item = self.events.get_nowait()
            except queue.Empty:
                return
            if kind == "back" and isinstance(item, threading.Event):
                item.set()
