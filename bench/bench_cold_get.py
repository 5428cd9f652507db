"""Cold `dk-mirror get --offline NAME` (a new process each time) vs `python -c "import sqlalchemy"`.

Usage: python -m bench.bench_cold_get [--runs N]
Target (issue 2): median wall time at most 1.3x the baseline; no httpx, mcp or web library imported.
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

HEAVY = (
    "httpx",
    "httpcore",
    "mcp",
    "starlette",
    "uvicorn",
    "jinja2",
    "tenacity",
    "alembic",
    "anyio",
    "sqlalchemy.orm",
)
PROBE = (
    "import sys, runpy; sys.argv = ['dk-mirror', 'get', '--offline', sys.argv[1]]\n"
    "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    f"print(sorted(m for m in sys.modules if m in {HEAVY!r}), file=sys.stderr)"
)


def wall(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall seconds of `runs` fresh processes."""
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    """Prepare a store with the sample, then time both commands, interleaved."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DK_MIRROR_HOME": str(Path(tmp) / "home")}
        env.pop("DK_MIRROR_DB", None)
        subprocess.run(
            [sys.executable, "-m", "mirror", "import", "--sample"],
            env=env,
            check=True,
            capture_output=True,
        )
        name = "documents/www.tensorflow.org/hub/caching"
        script = shutil.which("dk-mirror")
        ours = [script] if script else [sys.executable, "-m", "mirror"]
        ours += ["get", "--offline", name]
        base = [sys.executable, "-c", "import sqlalchemy"]
        wall(ours, env, 3)
        wall(base, env, 3)
        ours_t, base_t = [], []
        for _ in range(args.runs):
            ours_t += wall(ours, env, 1)
            base_t += wall(base, env, 1)
        probe = subprocess.run(
            [sys.executable, "-c", PROBE, name], env=env, capture_output=True, text=True, check=True
        )
    print(f"python -c 'import sqlalchemy'  median {ms(median(base_t))}")
    print(f"dk-mirror get --offline        median {ms(median(ours_t))}")
    print(f"ratio {median(ours_t) / median(base_t):.2f}x (target <= 1.3x), runs {args.runs}")
    print(f"heavy modules imported on this path: {probe.stderr.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
