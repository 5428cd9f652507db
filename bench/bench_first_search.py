"""An agent's first search over MCP against its later ones: `dk-mirror serve --stdio` spawned
by the `mcp` SDK's stdio client, as Claude Desktop spawns it (issue 27, item 6: `serve` keeps
the model warm; a user expects the first answer as fast as the rest).

Each spawn: start the server on the corpora store (the three corpus files in one store, every
page embedded, as bench_cold_get --corpora builds it), initialize, then call
`search_documents` with one question (the first call) and then with --later other questions
(later calls, each a new question: no answer is repeated). Two cases, spawns taking turns:
"at once", the first call right after initialize (what an agent does), and "after a pause",
the first call --pause seconds later. Also timed: spawn to initialized, and spawn to the first
result (at once only: the pause would be counted in the other). The baseline, measured in the
same run on the same servers, is the later calls: the ratio first / later at p50 is what a
user notices (target 1.0x). With --lexical, the same on a copy of the store without vectors
(DK_MIRROR_SEMANTIC=off). With --compare DIR..., every case also runs the checkout in each DIR (e.g.
`git archive main | tar -x -C DIR`), spawns interleaved with ours: a before/after in one run.

Usage: python -m bench.bench_first_search [--spawns N] [--later K] [--pause S] [--lexical]
       [--compare DIR...] [--stores DIR] [--corpus DIR] [--docs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

import anyio

from bench.bench_cold_get import CORPUS_FILES, prepare_stores
from bench.common import add_corpus_option, corpus_file, first_records, median, ms
from mirror.config import ENV_MODEL_CACHE

# Questions as agents ask them (prose: the hybrid ranking embeds every one). The first call of
# spawn i asks QUESTIONS[i % len], the later ones the questions after it, so each server sees
# each question once and the first question changes from spawn to spawn.
QUESTIONS = (
    "how do I keep a service worker alive while waiting for a message",
    "why does my extension lose its state when the browser restarts",
    "cache a downloaded model so the notebook does not fetch it again",
    "show a notification when a long download finishes",
    "how can a content script talk to the background page",
    "reduce the memory my tensorflow model uses during training",
    "let users pick a file from their disk in a web app",
    "what permission do I need to read the open tabs",
)


def server_command(checkout: Path | None) -> tuple[list[str], dict[str, str]]:
    """How a side starts the server: `python -m mirror serve --stdio`, with the checkout in
    `checkout` first on the path when given (run from a scratch folder, so `-m` does not pick
    up the current folder's checkout instead)."""
    extra = {"PYTHONPATH": str(checkout.resolve())} if checkout is not None else {}
    return [sys.executable, "-m", "mirror", "serve", "--stdio"], extra


async def one_spawn(
    command: list[str],
    env: dict[str, str],
    cwd: str,
    questions: list[str],
    pause: float,
    errlog: TextIO,
) -> dict[str, float | list[float]]:
    """Spawn a server, initialize, wait `pause` seconds, then one search per question: the
    seconds to initialized, to the first result, and of each call."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=cwd)
    calls: list[float] = []
    start = time.perf_counter()
    # The server's log lines go to `errlog`, not between the bench's own lines.
    async with Client(stdio_client(params, errlog=errlog)) as client:  # spawns, initializes
        ready = time.perf_counter() - start
        if pause:
            await anyio.sleep(pause)
        for question in questions:
            began = time.perf_counter()
            result = await client.call_tool("search_documents", {"query": question})
            done = time.perf_counter()
            calls.append(done - began)
            if result.is_error:
                raise SystemExit(f"bench: search_documents failed: {result.content}")
            if len(calls) == 1:
                first_result = done - start
    return {"ready": ready, "first_result": first_result, "calls": calls}


def main() -> None:
    """Build (or reuse) the corpora store, then time first and later searches per case."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spawns", type=int, default=8, help="servers started per case")
    parser.add_argument("--later", type=int, default=4, help="searches after the first, per spawn")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds before the first call")
    parser.add_argument(
        "--lexical", action="store_true", help="also a store without vectors (semantic off)"
    )
    parser.add_argument(
        "--compare", metavar="DIR", nargs="+", default=[], help="also run the checkout(s) in DIR"
    )
    parser.add_argument(
        "--stores", metavar="DIR", help="keep the corpora stores in DIR, and reuse them there"
    )
    parser.add_argument(
        "--docs", type=int, help="the first N records of each file only (a smoke run)"
    )
    add_corpus_option(parser)
    args = parser.parse_args()
    if not 0 < args.later < len(QUESTIONS):
        parser.error(f"--later must be 1 to {len(QUESTIONS) - 1}")
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("DK_MIRROR", "DEVELOPER_")) or k == ENV_MODEL_CACHE
        }
        env["DK_MIRROR_HOME"] = str(Path(tmp) / "home")
        # An installed dk-mirror runs from bytecode: without .pyc files this would time the
        # compiler (the first spawns, not timed, write them).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        kept = Path(args.stores) if args.stores else Path(tmp)
        kept.mkdir(parents=True, exist_ok=True)
        corpus = args.corpus
        if args.docs:
            corpus = str(Path(tmp) / "corpus")
            Path(corpus).mkdir()
            for name in CORPUS_FILES:
                first_records(corpus_file(name, args.corpus), args.docs, Path(corpus))
        stores = prepare_stores(kept, env, corpora=True, corpus=corpus)
        roles = ["hybrid", "lexical"] if args.lexical else ["hybrid"]
        checkouts: dict[str, Path | None] = {"": None}
        for other in args.compare:
            checkouts[f" [{Path(other).name}]"] = Path(other)
        cases = {}
        for suffix, checkout in checkouts.items():
            command, extra = server_command(checkout)
            for role in roles:
                side_env = {**env, **extra, "DK_MIRROR_DB": stores[role]}
                if role == "lexical":
                    side_env["DK_MIRROR_SEMANTIC"] = "off"
                store = "vectors" if role == "hybrid" else "no vectors"
                for pause in (0.0, args.pause):
                    when = "at once" if not pause else f"after {pause:g} s"
                    cases[f"{store}, {when}{suffix}"] = (command, side_env, pause)
        results: dict[str, list[dict]] = {label: [] for label in cases}
        with open(Path(tmp) / "servers.log", "w+", encoding="utf-8") as errlog:
            try:
                for spawn in range(1 + args.spawns):  # round 0 writes .pyc files, untimed
                    at = spawn % len(QUESTIONS)
                    asked = [QUESTIONS[(at + i) % len(QUESTIONS)] for i in range(1 + args.later)]
                    for label, (command, side_env, pause) in cases.items():
                        timing = anyio.run(one_spawn, command, side_env, tmp, asked, pause, errlog)
                        if spawn:
                            results[label].append(timing)
            except BaseException:
                errlog.seek(0)
                print(errlog.read()[-4000:], file=sys.stderr)  # what the servers said
                raise
    report(results, args)


def report(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    """One line per case: first and later p50, their ratio, spawn to initialized and to the
    first result."""
    print(
        f"{args.spawns} spawns per case, {args.later} later searches each, turns interleaved; "
        f"load average {os.getloadavg()[0]:.1f}; baseline: the later calls of the same servers"
    )
    for label, runs in results.items():
        first = [r["calls"][0] for r in runs]
        later = [t for r in runs for t in r["calls"][1:]]
        ready = median([r["ready"] for r in runs])
        line = (
            f"{label:34s} first p50 {ms(median(first)):>11s} (max {ms(max(first)):>11s})  "
            f"later p50 {ms(median(later)):>11s}  ratio {median(first) / median(later):5.2f}x "
            f"(target 1.0x)  spawn->initialized {ms(ready):>11s}"
        )
        if "at once" in label:
            line += f"  spawn->first result {ms(median([r['first_result'] for r in runs])):>11s}"
        print(line)


if __name__ == "__main__":
    main()
