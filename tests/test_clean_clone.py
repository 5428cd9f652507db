"""A clone of the repository passes its tests alone: the README's pytest command, run in a
fresh clone with no sibling folders (no ../shared), reads nothing outside the clone.

A clone holds only committed files, so this also catches test data that was never committed.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.user_env import user_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[1]
# Fast and representative: the emulator fixture, the cache contract, and ranking on real pages.
SUBSET = ["tests/test_emulator.py", "tests/test_get_documents.py", "tests/test_search_quality.py"]

# Runs pytest in the clone with an audit hook that records every file or folder opened outside
# it (the Python installation and temp folders aside).
RUNNER = r"""
import importlib.machinery, json, os, sys
clone, report, allowed = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])


class CloneMigrations:
    # What `pip install -e .` in the clone does (setuptools maps migrations/ to
    # mirror.migrations); this machine's editable install may map it to another checkout.
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "mirror.migrations":
            return importlib.machinery.PathFinder.find_spec(name, [clone])
        return None


sys.meta_path.insert(0, CloneMigrations)
outside = set()


def audit(event, args):
    if event in ("open", "os.listdir", "os.scandir") and isinstance(args[0], (str, bytes)):
        path = os.path.abspath(os.fsdecode(args[0]))
        if not any(path == a or path.startswith(a.rstrip(os.sep) + os.sep) for a in allowed):
            outside.add(path)


sys.addaudithook(audit)
import pytest

code = pytest.main(sys.argv[4:])
with open(report, "w") as out:
    json.dump(sorted(outside), out)
sys.exit(code)
"""


def _readme_pytest_args() -> list[str]:
    """The pytest arguments of the README's test command (its script, .ci/check), for its
    parallel part, run here in one process: xdist's workers would escape the audit hook."""
    for line in (ROOT / ".ci" / "check").read_text(encoding="utf-8").splitlines():
        if line.startswith("suite "):
            args = shlex.split(line)[1:]
            if "-n" in args:
                del args[args.index("-n") : args.index("-n") + 2]
            return args
    raise AssertionError(".ci/check runs no pytest (`suite ...`)")


def _allowed(clone: Path) -> list[str]:
    """Where the clone's run may read: the clone, the Python installation, temp and devices."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    places |= {str(clone), os.path.realpath(tempfile.gettempdir()), "/dev", "/proc", "/sys"}
    places |= {str(Path(p).resolve()) for p in list(places)}
    return sorted(places)


def test_the_readme_pytest_command_passes_in_a_fresh_clone(tmp_path: Path) -> None:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed: cannot clone the repository")
    inside = subprocess.run([git, "-C", str(ROOT), "rev-parse"], capture_output=True)
    if inside.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout (an unpacked archive?): nothing to clone")
    clone = tmp_path / "x" / "src"  # tmp_path/x has no sibling shared/ folder
    subprocess.run([git, "clone", "--quiet", str(ROOT), str(clone)], check=True, timeout=120)
    home, report = tmp_path / "home", tmp_path / "outside.json"
    home.mkdir()
    env = user_env()
    env |= {"PYTHONPATH": str(clone), "HOME": str(home), "DK_MIRROR_HOME": str(home / "dk")}
    env["DK_MIRROR_CORPUS_DIR"] = str(tmp_path / "no-such-corpus")
    env.pop("PYTHONSAFEPATH", None)
    args = [*_readme_pytest_args(), "-x", *SUBSET]
    run = subprocess.run(
        [sys.executable, "-c", RUNNER, str(clone), str(report), json.dumps(_allowed(clone)), *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1]
    assert json.loads(report.read_text()) == []
