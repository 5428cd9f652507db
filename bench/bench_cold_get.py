"""Cold CLI starts (a new process each time) vs `python -c "import sqlalchemy"`, in one run.

Times `dk-mirror get --offline NAME` (a cached document), `dk-mirror search --offline QUERY`
and `dk-mirror --help`, interleaved with the baseline (base, get, search, help, base, ...) so
machine load hits every side alike, and prints each median's ratio to the baseline's.

Usage: python -m bench.bench_cold_get [--runs N]
Target (issue 10, item 4): each ratio at most 0.4x; none of the heavy modules imported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import median, ms

TARGET = 0.4
HEAVY = (
    "sqlalchemy",
    "alembic",
    "httpx",
    "httpcore",
    "mcp",
    "starlette",
    "uvicorn",
    "jinja2",
    "tenacity",
    "anyio",
)
PROBE = (
    "import sys, runpy; sys.argv = ['dk-mirror', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)"
)
NAME = "documents/www.tensorflow.org/hub/caching"
COMMANDS = {
    "get --offline": ["get", "--offline", NAME],
    "search --offline": ["search", "--offline", "service worker lifecycle"],
    "--help": ["--help"],
}


def wall(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one fresh process."""
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    """Prepare a store with the sample, then time the commands and the baseline, interleaved."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DK_MIRROR_HOME": str(Path(tmp) / "home")}
        env.pop("DK_MIRROR_DB", None)
        # An installed dk-mirror runs from bytecode: without .pyc files this would time the
        # compiler on every start (the warm-up runs below write them).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run(
            [sys.executable, "-m", "mirror", "import", "--sample"],
            env=env,
            check=True,
            capture_output=True,
        )
        script = shutil.which("dk-mirror")
        ours = [script] if script else [sys.executable, "-m", "mirror"]
        sides = {"python -c 'import sqlalchemy'": [sys.executable, "-c", "import sqlalchemy"]}
        sides.update({f"dk-mirror {label}": ours + argv for label, argv in COMMANDS.items()})
        times: dict[str, list[float]] = {label: [] for label in sides}
        for _ in range(3):  # warm the page cache and .pyc files
            for cmd in sides.values():
                wall(cmd, env)
        for _ in range(args.runs):
            for label, cmd in sides.items():
                times[label].append(wall(cmd, env))
        heavy = {
            label: subprocess.run(
                [sys.executable, "-c", PROBE, *argv],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            .stderr.strip()
            .splitlines()[-1]
            for label, argv in COMMANDS.items()
        }
    base = median(next(iter(times.values())))
    print(f"runs {args.runs}, interleaved; load average {os.getloadavg()[0]:.1f}")
    for label, samples in times.items():
        ratio = median(samples) / base
        verdict = (
            "" if label.startswith("python") else f"  ratio {ratio:.2f}x (target <= {TARGET}x)"
        )
        print(f"{label:32s} median {ms(median(samples)):>12s}{verdict}")
    for label, found in heavy.items():
        print(f"heavy modules imported by {label}: {found}")


if __name__ == "__main__":
    main()
