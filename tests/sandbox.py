"""Run `dk-mirror` in a private mount namespace: read-only folders and files, tiny disks.

Root ignores permission bits, so chmod cannot make a store read-only for these tests; a
read-only bind mount (or a full tmpfs) can, and `unshare -m` keeps each mount private to one
child process, so nothing leaks to the machine or to other tests. Where the permission bits
themselves are the point (a user's chmod'ed store), `as_user` runs the child without the
capabilities that let root ignore them.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

import pytest

DK = [sys.executable, "-m", "mirror"]


@cache
def _problem(tool: str, probe: tuple[str, ...], refused: str) -> str | None:
    """Why `probe` (a run of `tool`) cannot be done here, or None when it can."""
    if shutil.which(tool) is None:
        return f"no {tool}(1) on this machine"
    done = subprocess.run(list(probe), capture_output=True, text=True)
    return None if done.returncode == 0 else f"{refused}: {done.stderr.strip()}"


def _skip_if(problem: str | None) -> None:
    if problem:
        pytest.skip(problem)


def require_mounts() -> None:
    """Skip the test, saying why, where private mounts are not permitted (not root, no caps)."""
    mounts = ("unshare", "-m", "sh", "-c", "mount -t tmpfs none /mnt && mount -o remount,ro /mnt")
    _skip_if(_problem("unshare", mounts, "cannot mount in a private namespace here"))


def read_only(path: Path) -> str:
    """Shell setup that makes `path` (a folder or a file) read-only for the child only."""
    quoted = shlex.quote(str(path))
    return f"mount --bind {quoted} {quoted} && mount -o remount,ro,bind {quoted}"


def tmpfs(folder: Path, size_kib: int) -> str:
    """Shell setup: an empty `size_kib` tmpfs mounted on `folder`."""
    return f"mount -t tmpfs -o size={size_kib}k none {shlex.quote(str(folder))}"


def fill(folder: Path) -> str:
    """Shell setup: a file in `folder` that takes every free byte of its disk."""
    filler = shlex.quote(str(folder / "filler"))
    return f"{{ dd if=/dev/zero of={filler} bs=4k 2>/dev/null; true; }}"


def full_disk(folder: Path, store: Path, size_kib: int = 2048) -> str:
    """Shell setup: a `size_kib` tmpfs on `folder` holding a copy of `store`, then filled up."""
    copy = f"cp {shlex.quote(str(store))} {shlex.quote(str(folder))}/"
    return f"{tmpfs(folder, size_kib)} && {copy} && {fill(folder)}"


# Root ignores permission bits; without these two capabilities it obeys them as any user
# does (for its own files: the owner's bits), so a chmod'ed store is as a user meets it.
OBEY_PERMISSIONS = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def require_permission_bits() -> None:
    """Skip, saying why, where a child cannot be made to obey permission bits."""
    if os.geteuid() != 0:
        return  # a user's processes obey them already: OBEY_PERMISSIONS is not needed
    probe = (*OBEY_PERMISSIONS, "true")
    _skip_if(_problem("setpriv", probe, "cannot drop the capabilities that ignore them here"))


def as_user(command: Sequence[str] = DK) -> list[str]:
    """`command` run so that it obeys permission bits, as a user's dk-mirror does."""
    return [*OBEY_PERMISSIONS, *command] if os.geteuid() == 0 else list(command)


def run(
    args: Sequence[str],
    *,
    setup: str = "",
    env: Mapping[str, str] | None = None,
    timeout: float = 60,
    command: Sequence[str] = DK,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`dk-mirror ARGS` in a subprocess, after `setup` ran in its own mount namespace
    (`input`: written to its stdin, which is then closed; else stdin is empty)."""
    argv = [*command, *args]
    if setup:
        argv = ["unshare", "-m", "sh", "-c", f'{setup} && exec "$@"', "sh", *argv]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else None,
        timeout=timeout,
        **({"stdin": subprocess.DEVNULL} if input is None else {"input": input}),
    )


def run_many(
    commands: Sequence[Sequence[str]],
    *,
    setup: str = "",
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each command line, all run in one subprocess."""
    from .cli_batch import BEGIN, END

    # The batch runner lives in this repository's tests package: put its root on the path.
    root = str(Path(__file__).resolve().parents[1])
    given = dict(os.environ if env is None else env)
    given["PYTHONPATH"] = os.pathsep.join(filter(None, [root, given.get("PYTHONPATH")]))
    done = run(
        [json.dumps([list(c) for c in commands])],
        setup=setup,
        env=given,
        timeout=timeout,
        command=[sys.executable, "-m", "tests.cli_batch"],
    )
    assert done.returncode == 0, done.stderr

    def framed(text: str) -> list[tuple[int, str]]:
        parts = []
        for chunk in text.split(BEGIN)[1:]:
            body, _, tail = chunk.partition(END)
            parts.append((int(tail.split()[1]), body.split("\n", 1)[1]))
        return parts

    outs, errs = framed(done.stdout), framed(done.stderr)
    assert len(outs) == len(errs) == len(commands), done.stderr
    return [(code, out, err) for (code, out), (_, err) in zip(outs, errs, strict=True)]
