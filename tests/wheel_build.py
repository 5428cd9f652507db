"""The project's wheel, built offline from a copy of the checkout.

setuptools builds in the source tree's build/ and *.egg-info folders: two tests building from
the checkout at once (xdist workers) overwrite each other's files and one build fails. Each
build works on its own copy instead.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_LEFT_OUT = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", ".hypothesis"
)


def build_wheel(work: Path) -> Path:
    """Build the wheel in `work` (a folder of the test's own); returns the wheel's path."""
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=_LEFT_OUT)
    dist = work / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = dist.glob("dk_mirror-*.whl")
    return wheel
