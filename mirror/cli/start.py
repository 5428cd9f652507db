"""The `dk-mirror` command's first moments: fork the dense ranking's helper, then run it.

A cold `search --offline` (or `answer --offline`, which quotes that search's ranking) with
vectors on needs numpy, onnxruntime, tokenizers and the model, which take longer to import and
load than the rest of the search takes in all. Forked here,
before this process imports click or anything of its own, a helper loads them on the other
core while the command starts (service/forked_dense.py); the search asks it for its dense
ranking when it knows it needs one, and dismisses it otherwise.

Only the command line is read here (the settings are not resolved yet): a guess that costs
only a helper's start when wrong, since the search decides for itself whether to use it.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..config import ENV_OFFLINE, ENV_SEMANTIC, ENV_STRICT_OFFLINE

if TYPE_CHECKING:
    from ..service.forked_dense import Helper

# The helper forked for this process, until a search takes it (killed at exit if none does).
_forked: Helper | None = None
# The commands that rank the store as `search --offline` does: an offline answer quotes the
# pages that ranking puts first (service/answers.py).
_RANKING = {"search", "answer"}
# Options after which the search cannot rank locally with vectors, or is not run at all.
_NOT_RANKED_HERE = {"--fetch", "--as-of", "--help", "-h", "--version"}


# The shell's exit status for a command ended by Ctrl-C (cli/main.py's EXIT_INTERRUPTED, not
# imported from there: this runs before that module is).
_EXIT_INTERRUPTED = 130


def main() -> None:
    """Console entry point."""
    global _forked
    try:
        if _may_rank_with_vectors(sys.argv[1:], os.environ):
            _forked = _fork_helper()
        from .main import main as run
    except KeyboardInterrupt:
        # Ctrl-C while the command's modules import (its first tenth of a second, before the
        # command line sets its own handler): nothing has started, so nothing is lost; said
        # as the command line says it, not as Python's traceback. sys.exit, so that atexit
        # still ends a helper forked already.
        sys.stderr.write("\ninterrupted\n")
        sys.exit(_EXIT_INTERRUPTED)
    run()


def take_helper() -> Helper | None:
    """The helper forked at start, handed over once (None: there is none)."""
    global _forked
    found, _forked = _forked, None
    return found


def _may_rank_with_vectors(args: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether this command line looks like an offline search (or answer) the semantic tier
    may rank."""
    if not _RANKING.intersection(args) or _NOT_RANKED_HERE.intersection(args):
        return False
    if not hasattr(os, "fork"):
        return False  # no fork (Windows): the model loads in a thread (service/warmup.py)
    if env.get(ENV_SEMANTIC, "on").strip().lower() in {"0", "false", "no", "off"}:
        return False
    on = {"1", "true", "yes", "on"}
    return (
        "--offline" in args
        or "--strict-offline" in args
        or env.get(ENV_OFFLINE, "").strip().lower() in on
        or env.get(ENV_STRICT_OFFLINE, "").strip().lower() in on
    )


def _fork_helper() -> Helper | None:
    # Imported before the fork: what both processes need (the helper's code, the Reader) is
    # then imported once, not in each.
    from ..service import forked_dense

    parent = os.getpid()
    # The objects of both processes' start left out of every later collection: a collection
    # walks (writes to) each object it tracks, which copies every page of a heap the two
    # share (measured: ~10 ms of CPU in each).
    gc.freeze()
    request_read, request_write = os.pipe()
    answer_read, answer_write = os.pipe()
    # Ctrl-C held back across the fork: the helper takes the default SIGINT (a quiet death)
    # before it can receive one, and the command keeps its own.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        os.close(request_write)
        os.close(answer_read)
        # A signal the command ignores (started by `nohup`, or with `&` from a script) is
        # ignored here too: else the helper alone would die of it, and the search lose its
        # vectors.
        for number in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(number) is not signal.SIG_IGN:
                signal.signal(number, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        _die_with_parent(parent)
        # A short life that makes few cycles: collections while numpy and onnxruntime import
        # cost ~10 ms of CPU and free next to nothing.
        gc.disable()
        # The helper never reads or writes the command's input and output: a reader of the
        # command's output (`| head`, a pipe) then sees its end when the command ends.
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0)
        os.dup2(quiet, 1)
        os.close(quiet)
        forked_dense.serve(request_read, answer_write)  # never returns
    signal.pthread_sigmask(signal.SIG_SETMASK, held)
    os.close(request_read)
    os.close(answer_write)
    if pid < 0:
        os.close(request_write)
        os.close(answer_read)
        return None
    # Killed and reaped at exit unless a search collects its answer (Helper.finish).
    return forked_dense.Helper(pid, request_write, answer_read)


def _die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (kill -9 included);
    elsewhere the helper ends when it reads the closed request pipe."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            pr_set_pdeathsig = 1
            ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(0)
