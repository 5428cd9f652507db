"""Cold CLI starts (a new process each time) vs `python -c "import sqlalchemy"`, in one run.

Times `dk-mirror get --offline NAME` (a cached document), `dk-mirror search --offline QUERY`
and `dk-mirror --help`, interleaved with the baseline (base, get, search, help, base, ...) so
machine load hits every side alike, and prints each median's ratio to the baseline's.

With --corpora, the store is the shared corpus (2,774 pages: the three files imported into
one store, as `dk-mirror import` does) and the search is timed twice: on that store with its
vectors (`dk-mirror index update`: the model loads in a cold process) and on a copy without
them, imported and searched with DK_MIRROR_SEMANTIC=off (the lexical tier alone).
An offline `answer` (extractive: it quotes the pages that search ranks first) is timed on the
store with vectors too. Questions rotate through QUESTIONS, so no run repeats the last. With --corpora the run also
times `python -c "import onnxruntime, tokenizers"`: the floor of a cold search with vectors
on this machine (its helper process imports them, then loads and runs the model).
With --compare DIR, every dk-mirror side also runs from the checkout in DIR (e.g. a clone of
main at the commit before a change), interleaved with the rest: a before/after in one run.

Usage: python -m bench.bench_cold_get [--runs N] [--corpora [--corpus DIR] [--stores DIR]]
       [--compare DIR]
Targets: issue 10, item 4: get, search and --help each at most 0.4x the baseline, none of the
heavy modules imported (onnxruntime only by a search with vectors); issue 27, item 6: a cold
search with vectors on the corpora store at most 250 ms at p50 on the 2-core dev machine.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import add_corpus_option, corpus_file, median, ms

TARGET = 0.4
HYBRID_TARGET = 0.250  # seconds, p50 (issue 27)
BASELINE = "python -c 'import sqlalchemy'"
FLOOR = "python -c 'import onnxruntime, tokenizers'"
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
    "onnxruntime",
)
PROBE = (
    "import sys, runpy; sys.argv = ['dk-mirror', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})), file=sys.stderr)"
)
NAME = "documents/www.tensorflow.org/hub/caching"
CORPUS_FILES = (
    "developer.chrome.com-en.jsonl.gz",
    "developer.chrome.com-intl.jsonl.gz",
    "tensorflow.org.jsonl.gz",
)
# Questions as people type them (prose: the hybrid ranking embeds them).
QUESTIONS = (
    "how do I keep a service worker alive while waiting",
    "why does my extension lose its state when the browser restarts",
    "cache a downloaded model so the notebook does not fetch it again",
    "show a notification when a long download finishes",
)


def wall(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall seconds of one fresh process."""
    start = time.perf_counter()
    subprocess.run(
        cmd, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - start


def _run(argv: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mirror", *argv], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        sys.exit(f"bench: `dk-mirror {' '.join(argv)}` failed:\n{done.stderr}")


def _copy_store(source: Path, target: Path) -> None:
    """The SQLite file and the full-text index folder beside it (no writer is open)."""
    shutil.copyfile(source, target)
    index = source.with_name(source.name + "-search")
    if index.is_dir():
        shutil.copytree(index, target.with_name(target.name + "-search"))


def prepare_stores(
    folder: Path, env: dict[str, str], *, corpora: bool, corpus: str | None
) -> dict[str, str]:
    """Store URLs by role: "sample" (the packaged sample), or with `corpora` "lexical" (the
    corpus, no vectors) and "hybrid" (the same with every page embedded)."""
    if not corpora:
        url = f"sqlite:///{folder / 'sample.sqlite3'}"
        _run(["import", "--sample"], {**env, "DK_MIRROR_DB": url})
        return {"sample": url}
    lexical, hybrid = folder / "lexical.sqlite3", folder / "hybrid.sqlite3"
    if lexical.is_file() and hybrid.is_file():  # --stores: made by an earlier run
        return {"lexical": f"sqlite:///{lexical}", "hybrid": f"sqlite:///{hybrid}"}
    for name in CORPUS_FILES:
        path = str(corpus_file(name, corpus))
        _run(
            ["import", path], {**_store_env(env, "lexical"), "DK_MIRROR_DB": f"sqlite:///{lexical}"}
        )
    _copy_store(lexical, hybrid)
    print("embedding the corpus (dk-mirror index update) ...", file=sys.stderr)
    _run(["index", "update"], {**env, "DK_MIRROR_DB": f"sqlite:///{hybrid}"})
    return {"lexical": f"sqlite:///{lexical}", "hybrid": f"sqlite:///{hybrid}"}


def _store_env(env: dict[str, str], role: str) -> dict[str, str]:
    """The environment of a command on the store of `role`: the lexical store is one whose
    user turned the dense tier off (an import embeds by default, a search ranks with vectors)."""
    return {**env, "DK_MIRROR_SEMANTIC": "off"} if role == "lexical" else dict(env)


def commands(stores: dict[str, str]) -> dict[str, tuple[str, list[str]]]:
    """Each timed command: its label, the store it runs on, its arguments (a search's
    question is filled in per run)."""
    if "sample" in stores:
        return {
            "get --offline": ("sample", ["get", "--offline", NAME]),
            "search --offline": ("sample", ["search", "--offline", "service worker lifecycle"]),
            "--help": ("sample", ["--help"]),
        }
    return {
        "get --offline": ("hybrid", ["get", "--offline", NAME]),
        "search --offline, lexical": ("lexical", ["search", "--offline", "{question}"]),
        "search --offline, vectors": ("hybrid", ["search", "--offline", "{question}"]),
        "answer --offline, vectors": ("hybrid", ["answer", "--offline", "{question}"]),
        "--help": ("hybrid", ["--help"]),
    }


def main() -> None:
    """Prepare the store(s), then time the commands and the baseline, interleaved."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--corpora", action="store_true", help="the shared corpus in one store, with vectors"
    )
    parser.add_argument("--compare", metavar="DIR", help="also run the checkout in DIR")
    parser.add_argument(
        "--stores", metavar="DIR", help="keep the corpora stores in DIR, and reuse them there"
    )
    add_corpus_option(parser)
    args = parser.parse_args()
    # A corpus folder named is a corpus to time: without it the bench would time the sample
    # and never look at the folder (a wrong path passed silently).
    args.corpora = args.corpora or args.corpus is not None
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "DK_MIRROR_HOME": str(Path(tmp) / "home")}
        env.pop("DK_MIRROR_DB", None)
        # An installed dk-mirror runs from bytecode: without .pyc files this would time the
        # compiler on every start (the warm-up runs below write them).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        kept = Path(args.stores) if args.stores and args.corpora else Path(tmp)
        kept.mkdir(parents=True, exist_ok=True)
        stores = prepare_stores(kept, env, corpora=args.corpora, corpus=args.corpus)
        # The command installed beside this Python (not the first on PATH: a pyenv shim or
        # another install would time other code); with --compare, both sides start the same
        # way, so the difference is the code's.
        script = Path(sys.executable).with_name("dk-mirror")
        ours = (
            [str(script)]
            if script.is_file() and not args.compare
            else [sys.executable, "-m", "mirror"]
        )
        checkouts = {"": (ours, env)}
        if args.compare:
            # The other checkout first on the path: `python -m mirror` then runs its code.
            # (Every side runs in the temporary folder: `-m` puts the working folder before
            # PYTHONPATH, so run from a checkout both sides would run that checkout.)
            other = {**env, "PYTHONPATH": str(Path(args.compare).resolve())}
            checkouts[f" [{Path(args.compare).name}]"] = ([sys.executable, "-m", "mirror"], other)
        sides: dict[str, tuple[list[str], dict[str, str]]] = {
            BASELINE: ([sys.executable, "-c", "import sqlalchemy"], env)
        }
        for suffix, (prefix, base_env) in checkouts.items():
            for label, (role, argv) in commands(stores).items():
                side_env = {**_store_env(base_env, role), "DK_MIRROR_DB": stores[role]}
                sides[f"dk-mirror {label}{suffix}"] = (prefix + argv, side_env)
        if args.corpora:
            # The floor of a cold search with vectors: importing the model's packages alone
            # (the helper that ranks the vectors does this, and then loads and runs the model).
            # Last: the process after it starts a little slower (measured: a `get` after it
            # took 20% longer in wall time, the same CPU), and the baseline takes that place.
            sides[FLOOR] = ([sys.executable, "-c", "import onnxruntime, tokenizers"], env)
        questions = itertools.cycle(QUESTIONS)
        times: dict[str, list[float]] = {label: [] for label in sides}
        for run in range(3 + args.runs):  # 3 to warm the page cache and .pyc files
            question = next(questions)
            for label, (cmd, side_env) in sides.items():
                took = wall(
                    [part.replace("{question}", question) for part in cmd], side_env, Path(tmp)
                )
                if run >= 3:
                    times[label].append(took)
        heavy = {}
        for label, (role, argv) in commands(stores).items():
            filled = [a.replace("{question}", QUESTIONS[0]) for a in argv]
            probe = [sys.executable, "-c", PROBE, *filled]
            found = subprocess.run(
                probe,
                env={**_store_env(env, role), "DK_MIRROR_DB": stores[role]},
                capture_output=True,
                text=True,
            )
            heavy[label] = (found.stderr.strip().splitlines() or ["?"])[-1]
    base = median(times[BASELINE])
    print(f"runs {args.runs}, interleaved; load average {os.getloadavg()[0]:.1f}")
    for label, samples in times.items():
        ratio = median(samples) / base
        if label == FLOOR:
            verdict = f"  ratio {ratio:.2f}x (the model's packages imported, nothing else)"
        elif label.startswith("python"):
            verdict = ""
        elif "vectors" in label:
            verdict = f"  ratio {ratio:.2f}x (target p50 <= {ms(HYBRID_TARGET)})"
        else:
            verdict = f"  ratio {ratio:.2f}x (target <= {TARGET}x)"
        print(f"{label:44s} median {ms(median(samples)):>12s}{verdict}")
    for label, found in heavy.items():
        print(f"heavy modules imported by {label}: {found}")


if __name__ == "__main__":
    main()
