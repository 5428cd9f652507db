"""A cold search's dense ranking in a helper process, so it runs beside the lexical one.

A cold `dk-mirror search --offline` with vectors on spends most of its time importing numpy,
onnxruntime and tokenizers and loading the model: imports hold the interpreter's lock, so a
worker thread could not overlap them with the rest of the command (it measured 1.36x the
time of importing SQLAlchemy, against 0.63x for words only; bench/bench_cold_get.py). So the
command forks a helper as it starts (mirror/cli/start.py, before it imports anything
else), which imports those and loads the model on the other core while the command imports
its own modules, opens the store and ranks lexically. When the command knows its search
ranks with vectors it sends the helper the question (`Helper.ask`); the helper embeds it,
ranks the store's vectors exactly as `semantic.dense` does, and sends back only (name,
score) pairs: the command never imports numpy or onnxruntime, nor waits for their teardown.

The helper opens its own read-only connection (the command opens the store after the fork),
never returns into the command's code (os._exit: no atexit handler, buffered output or
finaliser of the command runs twice) and dies with it (Linux: PR_SET_PDEATHSIG; a Ctrl-C at
the terminal reaches both, and the helper's default SIGINT ends it without a traceback).
Whatever goes wrong in it (an error, a crash, no answer within WAIT_SECONDS) the search
ranks by words only and says why (FAILED); a store the cold Reader cannot read is ranked by
the command itself, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import select
import signal
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

# The command reads the store through it too: imported before the fork, once for both.
from ..store.reader import Reader

if TYPE_CHECKING:
    from ..config import Settings
    from ..search.filters import Node

# The longest a search waits for the helper's ranking. A cold load takes 0.1-1 s on the
# 2-core machine under load, the first one (no prepared model cached yet) a few seconds; a
# helper still silent after this has hung, and the search answers by words alone.
WAIT_SECONDS = 30.0
# Said (as a warning) when the helper failed and the search ranked by words only.
FAILED = "semantic search failed ({reason}): ranked by words only"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The helper's answer: `ranking` (None: the store has no vectors of this model, as
    `semantic.dense` says), or `local` (rank in this process), or `failed` (why)."""

    ranking: list[tuple[str, float]] | None = None
    local: bool = False
    failed: str | None = None


class Helper:
    """The command's side of a forked helper: asked one ranking, collected once, and reaped
    (or killed) by the time the command exits."""

    def __init__(self, pid: int, request_fd: int, answer_fd: int) -> None:
        self.pid = pid
        self._request_fd = request_fd
        self._answer_fd = answer_fd
        self._asked: tuple[str, int, Node | None] | None = None
        self._answered = False
        self._reaped = False
        atexit.register(self.finish)
        _unreaped.add(self)

    def ask(self, settings: Settings, query: str, limit: int, where: Node | None) -> None:
        """Send the helper the ranking to make: `query`'s `limit` nearest documents in the
        store of `settings` that pass `where`."""
        request = (settings.db_url, settings.keep_versions, query, limit, where)
        try:
            _send(self._request_fd, pickle.dumps(request))
        except OSError:
            pass  # it died already: `collect` says so
        finally:
            self._request_fd = -1
        self._asked = (query, limit, where)

    def matches(self, query: str, limit: int, where: Node | None) -> bool:
        """Whether the helper was asked exactly what the caller is about to rank."""
        return self._asked == (query, limit, where)

    def collect(self, timeout: float | None = None) -> Outcome:
        """The helper's answer, waiting at most `timeout` seconds (WAIT_SECONDS by default;
        killed when it has none by then)."""
        timeout = WAIT_SECONDS if timeout is None else timeout
        # `_read` closes the pipe whatever happens: handed over first, so that `dismiss`
        # (a Ctrl-C while waiting) does not close it again (EBADF replaced the Ctrl-C with a
        # traceback and exit 1, or could close a descriptor opened meanwhile).
        fd, self._answer_fd = self._answer_fd, -1
        try:
            raw = _read(fd, timeout)
        except BaseException:  # Ctrl-C while waiting: no helper outlives the search
            self.dismiss()
            raise
        if raw is None:
            self.dismiss()
            return Outcome(failed=f"no answer within {timeout:g} s")
        try:
            message = json.loads(raw) if raw else None
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.dismiss()
            return Outcome(failed="its process ended without an answer")
        # It exits by itself now, and is reaped when this process exits: its teardown
        # overlaps the rest of the search.
        self._answered = True
        if message.get("failed"):
            return Outcome(failed=str(message["failed"]))
        if message.get("local"):
            return Outcome(local=True)
        found = message.get("ranking")
        return Outcome(ranking=None if found is None else [(n, float(s)) for n, s in found])

    def finish(self) -> None:
        """At exit: reap a helper that answered (it is exiting), kill one that did not."""
        if self._answered:
            self._reap()
        else:
            self.dismiss()

    def dismiss(self) -> None:
        """Kill the helper (its answer is not wanted, or will not come) and reap it."""
        for fd in (self._request_fd, self._answer_fd):
            if fd >= 0:
                os.close(fd)
        self._request_fd = self._answer_fd = -1
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        if self._reaped:
            return
        self._reaped = True
        _unreaped.discard(self)
        with contextlib.suppress(ChildProcessError):  # reaped already
            os.waitpid(self.pid, 0)


# Helpers not reaped yet: a command that leaves with os._exit (Ctrl-C, mirror/cli/main.py)
# runs no atexit handler, so it dismisses them itself (dismiss_all).
_unreaped: set[Helper] = set()


def dismiss_all() -> None:
    """Kill and reap every helper not reaped yet, answered or not: for a command leaving at
    once (Ctrl-C). Without it a helper would die only by the same Ctrl-C or by its parent's
    death (PR_SET_PDEATHSIG), both a moment after the command's exit, or, if the command alone
    was signalled, be found alive after it ended."""
    for helper in list(_unreaped):
        helper.dismiss()


_asked: Helper | None = None


def ask(helper: Helper, settings: Settings, query: str, limit: int, where: Node | None) -> None:
    """Ask `helper` for a ranking, for the search's `take` to collect."""
    global _asked
    helper.ask(settings, query, limit, where)
    _asked = helper


def take(query: str, limit: int, where: Node | None) -> Helper | None:
    """The helper asked for exactly this ranking, handed over once (None: rank here). One
    asked for another ranking is dismissed."""
    global _asked
    helper, _asked = _asked, None
    if helper is None:
        return None
    if not helper.matches(query, limit, where):
        helper.dismiss()
        return None
    return helper


def _read(fd: int, timeout: float) -> bytes | None:
    """Everything written to `fd` until it is closed (then closed here); None at the
    deadline."""
    deadline = time.monotonic() + timeout
    parts: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            part = os.read(fd, 65536)
            if not part:
                return b"".join(parts)
            parts.append(part)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    """Everything written to `fd` until it is closed (then closed here)."""
    parts: list[bytes] = []
    try:
        while part := os.read(fd, 65536):
            parts.append(part)
    finally:
        os.close(fd)
    return b"".join(parts)


def _send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


# -- the helper's side -------------------------------------------------------------------------


def serve(request_fd: int, answer_fd: int) -> NoReturn:
    """The helper's whole life, in the forked process: load the model, wait for the one
    request (none: the command did not need it), rank, answer, exit."""
    code = 0
    try:
        try:
            _prepare()
            failure = None
        except Exception as exc:  # said when the request comes, by the command
            failure = _describe(exc)
        raw = _read_all(request_fd)
        if raw:
            db_url, keep_versions, query, limit, where = pickle.loads(raw)
            if failure is not None:
                message: dict[str, object] = {"failed": failure}
            else:
                try:
                    message = _rank(db_url, keep_versions, query, limit, where)
                except Exception as exc:
                    message = {"failed": _describe(exc)}
            _send(answer_fd, json.dumps(message).encode())
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _prepare() -> None:
    """Everything before the question: the model loaded, the modules of the ranking imported."""
    from ..semantic import model
    from . import semantic  # noqa: F401  (imported now, not after the question)

    shared = model.loaded()
    # Built for one query (model.py: `quick_start`), as a warmed cold search builds it.
    shared.quick_start = True
    if shared.info.available:
        shared.load()


def _rank(
    db_url: str, keep_versions: int, query: str, limit: int, where: Node | None
) -> dict[str, object]:
    from .semantic import dense

    store = Reader.open(db_url, readonly=True, keep_versions=keep_versions)
    if store is None:
        return {"local": True}  # not a store the cold Reader reads: the command ranks it
    try:
        return {"ranking": dense(store, query, limit=limit, where=where)}
    finally:
        store.close()


def _describe(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
