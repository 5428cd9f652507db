"""Every bench in bench/ runs as a smoke run: tiny sizes on tests/data/corpus, one round, so a
refactor that breaks a bench fails here and not in the hands of the next person who runs it.

Each runs as a user runs it (`python -m bench.NAME`, a fresh process, the corpus given by
DK_MIRROR_CORPUS_DIR) with what a plain install has: pytest and the rest of the dev extra are
hidden from it (a bench that imported them failed on a plain install). Only completion and
the printed figures are checked, never a wall-clock number (DESIGN.md: benches never fail a
test on one).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.user_env import user_env

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"

# A ratio as the benches print them: "0.59x", "x1.53", "12.3x".
RATIO = r"\d+\.\d+x|x\d+\.\d+"
# The relevance benches print metrics, not ratios: "all (101)   0.94 / 0.97 / 0.95 ...".
METRICS = r"\ball\b.*\d\.\d+ / \d\.\d+ / \d\.\d+"

# Each bench's smallest run that still goes through all of its code ({tmp}: a folder of the
# test's own), and what its output must show. A bench added to bench/ without an entry here
# fails test_every_bench_has_a_smoke_run.
SMOKE: dict[str, tuple[list[str], str]] = {
    # One batch of the held-out questions (50 of 365) goes through all of the code.
    "bench_answers": (["--no-semantic", "--batch", "5"], METRICS),
    "bench_changes": (["--events", "3000", "--rounds", "3"], RATIO),
    "bench_codec": (["--docs", "100", "--rounds", "20", "--repeat", "1"], RATIO),
    "bench_cold_get": (["--runs", "1"], RATIO),
    "bench_crawl": (["--pages", "60", "--latency", "0.001", "--concurrency", "8"], RATIO),
    "bench_fetch": (
        ["--docs", "100", "--rounds", "1", "--latency", "0.001", "--backoff-scale", "0.01"],
        RATIO,
    ),
    "bench_export": (["--docs", "30", "--formats", "md", "zim"], RATIO),
    "bench_first_search": (
        ["--spawns", "1", "--later", "1", "--pause", "0.1", "--docs", "40"],
        RATIO,
    ),
    "bench_get": (["--rounds", "50"], RATIO),
    "bench_hybrid_scale": (["--docs", "60", "--queries", "3", "--cache", "{tmp}"], RATIO),
    "bench_import": (["--repeat", "1"], RATIO),
    "bench_import_embed": (["--docs", "20"], RATIO),
    "bench_questions": (["--no-semantic", "--batch", "5"], METRICS),
    "bench_pg": (["--docs", "60", "--rounds", "10", "--seconds", "0.5", "--servers", "2"], RATIO),
    "bench_quota": (["--batches", "2", "--window", "1"], RATIO),
    "bench_refresh": (["--latency", "0.001"], RATIO),
    "bench_relevance": (["--no-hybrid"], METRICS),
    "bench_render": (["--docs", "20", "--repeat", "1"], RATIO),
    "bench_scale": (["--sizes", "200", "--queries", "5", "--cache", "{tmp}"], RATIO),
    "bench_search": (["--docs", "200", "--queries", "5"], RATIO),
    "bench_semantic": (["--docs", "30", "--queries", "5", "--at", "500"], RATIO),
    "bench_serve": (["--rounds", "20", "--seconds", "0.5", "--levels", "1", "8"], RATIO),
    "bench_shard_relevance": (["--padding", "200", "--split-from", "100"], METRICS),
    "bench_snapshot": (["--docs", "200", "--runs", "1"], RATIO),
    "bench_typeahead": (["--docs", "300", "--queries", "4", "--cache", "{tmp}"], RATIO),
}

BENCHES = sorted(path.stem for path in (ROOT / "bench").glob("bench_*.py"))

# What a bench may not import: the dev extra (pip install -e '.[dev]'), absent on a plain install.
DEV_ONLY = ("pytest", "hypothesis", "yaml", "playwright", "mypy", "ruff")


def _needs(bench: str) -> str | None:
    """Why `bench` cannot run here (an extra or a server it needs is absent), else None."""
    # bench_first_search embeds its store (`dk-mirror index update`) to serve it with vectors.
    semantic = "semantic" in bench or "hybrid" in bench or bench == "bench_first_search"
    if semantic and importlib.util.find_spec("onnxruntime") is None:
        return "needs the semantic extra"
    if bench == "bench_pg":
        from tests.postgres_server import binaries

        if importlib.util.find_spec("psycopg") is None or binaries() is None:
            return "needs the postgres extra and PostgreSQL's server binaries"
    return None


def test_every_bench_has_a_smoke_run() -> None:
    assert BENCHES, "no bench found"
    assert set(BENCHES) == set(SMOKE), "add the new bench's smoke arguments to SMOKE"


def _hidden_dev_extra(folder: Path) -> Path:
    """A folder of modules named after the dev extra's that refuse to import: first on the
    path, it makes the bench's process a plain install's."""
    folder.mkdir()
    for name in DEV_ONLY:
        (folder / f"{name}.py").write_text(
            f"raise ImportError('{name} is in the dev extra; a bench must run without it')\n",
            encoding="utf-8",
        )
    return folder


@pytest.mark.slow
@pytest.mark.timeout(600)  # the whole bench, on a loaded 2-core machine
@pytest.mark.parametrize("bench", BENCHES)
def test_the_bench_completes_and_prints_its_figures(tmp_path: Path, bench: str) -> None:
    why = _needs(bench)
    if why:
        pytest.skip(f"{bench} {why}")
    args, shows = SMOKE[bench]
    hidden = _hidden_dev_extra(tmp_path / "no-dev-extra")
    env = user_env()
    env.update(
        PYTHONPATH=os.pathsep.join([str(hidden), str(ROOT)]),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        DK_MIRROR_CORPUS_DIR=str(CORPUS),
        DK_MIRROR_HOME=str(tmp_path / "home"),
    )
    work = tmp_path / "work"
    work.mkdir()
    command = [sys.executable, "-m", f"bench.{bench}", *(a.format(tmp=work) for a in args)]
    start = time.perf_counter()
    run = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    seconds = time.perf_counter() - start
    assert run.returncode == 0, f"{' '.join(command[1:])} failed:\n{run.stderr[-4000:]}"
    assert "Traceback" not in run.stderr, run.stderr[-4000:]
    assert re.search(shows, run.stdout), f"no figures in the output:\n{run.stdout}"
    assert "nan" not in run.stdout.split(), run.stdout
    print(f"{bench}: {seconds:.1f} s")
