"""Letting other work go while a call waits for its retry: a hook around every retry wait.

A worker that holds one of a few in-flight slots (service/parallel.py) gives the slot up for
the length of a backoff or Retry-After wait and takes it back before trying again, so a batch
waiting to retry does not keep the batches behind it waiting too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

Hook = Callable[[], AbstractContextManager[None]]

_local = threading.local()


@contextmanager
def parking(hook: Hook) -> Iterator[None]:
    """Within the block, every retry wait on this thread runs inside `hook()`."""
    previous = getattr(_local, "hook", None)
    _local.hook = hook
    try:
        yield
    finally:
        _local.hook = previous


def parked_sleep(sleep: Callable[[float], None], seconds: float) -> None:
    """`sleep(seconds)`, inside this thread's parking hook when it has one.

    A retry that goes at once (0 s) keeps its slot: giving it up would only queue it again.
    """
    hook: Hook | None = getattr(_local, "hook", None)
    if hook is None or seconds <= 0:
        sleep(seconds)
        return
    with hook():
        sleep(seconds)
