""".ci/check, the README's test command: which Python it runs, and how it runs the suite.

It runs here with a stand-in Python (a script that records its arguments), so what is checked
is the script's own logic: the active virtualenv's Python for every step, a clear refusal
where a system-wide install is refused, the suite in a parallel and a serial part, and
"no tests selected" (pytest's exit code 5) not counted as a failure.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / ".ci" / "check"
POSTGRES = Path("/usr/lib/postgresql/15/bin/postgres")

# Records each call as one line of arguments (and, for pip, whether it may install over a
# system Python's packages); `-m pytest -m serial` exits with $SERIAL_EXIT;
# `-c` (the externally-managed probe) exits with $MANAGED (0: managed).
FAKE_PYTHON = """#!/usr/bin/env bash
echo "$*" >> "$CALLS"
if [ "$1 $2" = "-m pip" ]; then echo "${PIP_BREAK_SYSTEM_PACKAGES:-}" > "$CALLS.pip"; fi
if [ "$1" = -c ]; then exit "${MANAGED:-1}"; fi
if [ "$1 $2" = "-m pytest" ] && [[ " $* " == *" -m serial "* ]]; then exit "${SERIAL_EXIT:-0}"; fi
exit 0
"""


def suite_lines() -> list[list[str]]:
    """The arguments of each `suite` (pytest) run in .ci/check, in order."""
    lines = CHECK.read_text(encoding="utf-8").splitlines()
    return [shlex.split(line)[1:] for line in lines if line.startswith("suite ")]


def _marker_expression(args: list[str]) -> str:
    return args[args.index("-m") + 1]


def test_the_suite_runs_in_a_parallel_part_then_the_serial_part() -> None:
    parallel, serial = suite_lines()
    assert parallel[parallel.index("-n") + 1] == "4"
    assert _marker_expression(parallel) == "not serial"
    # The tests that assert about time: two at a time on the two cores, never more.
    assert serial[serial.index("-n") + 1] == "2"
    assert _marker_expression(serial) == "serial"  # together: every test, once


def _run_check(
    tmp_path: Path, *, venv: bool, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    if not POSTGRES.is_file():
        pytest.skip(".ci/check would install PostgreSQL with apt-get here (root, a network)")
    bin_dir = tmp_path / ("venv/bin" if venv else "bin")
    bin_dir.mkdir(parents=True)
    fake = bin_dir / ("python" if venv else "python3")
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    for program in ("chromium", "zeal", "Xvfb"):  # present: nothing to install
        (bin_dir / program).write_text("#!/bin/sh\n")
        (bin_dir / program).chmod(0o755)
    calls = tmp_path / "calls"
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CI")}
    full.update(CALLS=str(calls), **env)
    if venv:
        full["VIRTUAL_ENV"] = str(bin_dir.parent)
        full["PATH"] = f"/usr/bin{os.pathsep}/bin"  # not activated: .ci/check puts it first
    else:
        full["PATH"] = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    done = subprocess.run(
        ["bash", str(CHECK)], env=full, capture_output=True, text=True, timeout=60
    )
    return done, calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.slow
def test_in_a_virtualenv_every_step_runs_its_python(tmp_path: Path) -> None:
    done, calls = _run_check(tmp_path, venv=True)
    assert done.returncode == 0, done.stderr
    assert [c.split()[1] for c in calls] == ["pip", "ruff", "ruff", "mypy", "pytest", "pytest"]
    assert (
        calls[-2] == "-m pytest -q -n 4 -m not serial --durations=15"
        and calls[-1] == "-m pytest -q -n 2 -m serial --durations=5"
    )


@pytest.mark.slow
def test_no_serial_test_selected_is_not_a_failure_but_a_failed_one_is(tmp_path: Path) -> None:
    done, _ = _run_check(tmp_path / "none", venv=True, SERIAL_EXIT="5")
    assert done.returncode == 0, done.stderr
    failed, _ = _run_check(tmp_path / "failed", venv=True, SERIAL_EXIT="1")
    assert failed.returncode == 1


@pytest.mark.slow
def test_a_system_python_that_refuses_installs_is_named_outside_ci(tmp_path: Path) -> None:
    done, calls = _run_check(tmp_path / "laptop", venv=False, MANAGED="0")
    assert done.returncode == 2 and "run it in a virtualenv" in done.stderr
    assert not [c for c in calls if "pip" in c]  # refused before installing anything
    ci, calls = _run_check(tmp_path / "ci", venv=False, MANAGED="0", CI="true")
    assert ci.returncode == 0, ci.stderr
    assert (
        calls[1].startswith("-m pip install")
        and calls[-1] == "-m pytest -q -n 2 -m serial --durations=5"
    )
    assert (tmp_path / "ci" / "calls.pip").read_text().strip() == "1"  # a throwaway machine
