"""Ctrl-C: one flag for the whole process, which every wait of a long run watches.

A crawl's workers spend most of their time waiting: for a quota slot (pacing), for a retry
(backoff, Retry-After). Python delivers Ctrl-C to the main thread only, so a worker asleep in
`time.sleep` would sleep on, and the run could not end until it woke (a minute, at a low
quota). Every such wait goes through `sleep` here instead: once the command line has been told
to stop (`request_stop`, from its SIGINT handler), a wait in progress ends at once and raises
`Stopping`, and so does every later one, so no worker starts another call.

Python runs a signal handler on the main thread only, and only when that thread runs Python
code. The kernel may hand SIGINT to any thread, a worker included: then a main thread blocked in
an untimed wait (`Queue.get()`, `Thread.join()`) would not hear Ctrl-C until its wait ended on
its own, a whole quota interval later. So the main thread waits with `take` and `join`, which
wake every HEAR_EVERY seconds to let a pending Ctrl-C through.

The flag is only ever set by the command line, whose process is about to exit: a program that
uses `Mirror` as a library keeps Python's own Ctrl-C and its waits are plain sleeps.
"""

from __future__ import annotations

import queue
import threading
from typing import TypeVar

T = TypeVar("T")

# Seconds a main-thread wait blocks at most before a pending Ctrl-C is acted on.
HEAR_EVERY = 0.1

_stop = threading.Event()


class Stopping(KeyboardInterrupt):
    """A wait cut short because the run is stopping (Ctrl-C): nothing more is started.

    A KeyboardInterrupt, so no `except Exception` on the way mistakes it for a failed call.
    """


def request_stop() -> None:
    """Stop the run: every wait in progress ends and raises Stopping, as will later ones."""
    _stop.set()


def stop_requested() -> bool:
    """True once the run has been told to stop."""
    return _stop.is_set()


def sleep(seconds: float) -> None:
    """Wait `seconds`; raise Stopping at once if the run is, or becomes, stopping."""
    if _stop.wait(max(seconds, 0.0)):
        raise Stopping("stopping")


def take(source: queue.Queue[T] | queue.SimpleQueue[T]) -> T:
    """The next item of `source`, waiting as long as it takes, Ctrl-C heard meanwhile."""
    while True:
        try:
            return source.get(timeout=HEAR_EVERY)
        except queue.Empty:
            continue


def join(thread: threading.Thread) -> None:
    """Wait for `thread` to end, Ctrl-C heard meanwhile."""
    while thread.is_alive():
        thread.join(HEAR_EVERY)
