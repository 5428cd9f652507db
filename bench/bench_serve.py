"""get_documents of 20 cached names through `dk-mirror serve` (HTTP MCP and REST).

Usage: python -m bench.bench_serve [--rounds N] [--seconds S] [--part load|paths|both]

The server is a real `dk-mirror serve` process (read-only, the corpus in its store).

load (issue 9): requests/s, p50 and p99 at 1, 8, 32 and 64 keep-alive clients (REST batchGet
and MCP tools/call), next to a bare Starlette endpoint in its own process under the same uvicorn
settings returning the very same answer bytes from memory, in the same run, the two taking
turns within each level. Target: p99 at 64 clients within 3x of the bare endpoint's;
throughput flat or rising from 8 to 64 clients. The 200 requests repeat, and a read-only
server keeps the documents it answered with (serve/answer_cache.py) and, for MCP, the SDK's
own answer to each get_documents call (serve/mcp_replay.py), so after the first round the
mirror answers from memory too: what is measured is its request handling, not SQLite.

paths: one client at a time: httpx.Client for REST and raw JSON-RPC, one mcp Client session for
the SDK. Baseline: Mirror.get_documents on the same store, in this process, in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio
import httpx

from bench.common import add_corpus_option, english_corpus, median, ms, pct, timed
from bench.load import Level, request_bytes, run_level
from mirror.config import Settings
from mirror.service import Mirror

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


LEVELS = (1, 8, 32, 64)
# Each level runs the mirror and the bare endpoint in turns of this many slices each, so a
# burst of load from other programs on the machine falls on both rather than on one.
SLICES = 4


def alternating(
    ours: tuple[str, list[bytes]], bare: tuple[str, list[bytes]], clients: int, seconds: float
) -> tuple[Level, Level]:
    """`clients` against each server for `seconds` in all, in SLICES alternating turns."""
    runs: tuple[list[Level], list[Level]] = ([], [])
    for _ in range(SLICES):
        for (url, requests), out in zip((ours, bare), runs, strict=True):
            out.append(run_level(url, requests, clients, seconds / SLICES))
    return pooled(runs[0]), pooled(runs[1])


def pooled(levels: list[Level]) -> Level:
    """One Level from several runs at the same number of clients."""
    return Level(
        levels[0].clients,
        [t for level in levels for t in level.latencies],
        sum(level.errors for level in levels),
        sum(level.seconds for level in levels),
    )


def start_server(db: Path | str) -> tuple[subprocess.Popen[bytes], str]:
    """`dk-mirror serve --port 0` on the store; returns the process and its base URL."""
    return _start([sys.executable, "-m", "mirror", "serve", "--port", "0", "--db", str(db)])


def _start(command: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """Run a server that logs `dk-mirror serve: URL` (or `bare: URL`) on stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DK_MIRROR", "DEVELOPER_"))}
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if select.select([process.stderr], [], [], 0.2)[0]:
            seen += os.read(process.stderr.fileno(), 4096)
            match = re.search(rb"(?:dk-mirror serve|bare): (http://[\d.]+:\d+)", seen)
            if match:
                return process, match.group(1).decode()
    process.kill()
    raise SystemExit(f"the server did not start:\n{seen.decode(errors='replace')}")


def mcp_sdk_times(url: str, draws: list[list[str]], warm: int) -> list[float]:
    """Per-call seconds of get_documents through one mcp Client session."""
    from mcp import Client

    out: list[float] = []

    async def main() -> None:
        async with Client(url + "/mcp") as client:
            for i, names in enumerate(draws):
                start = time.perf_counter()
                result = await client.call_tool("get_documents", {"names": names})
                if i >= warm:
                    out.append(time.perf_counter() - start)
                assert not result.is_error

    anyio.run(main)
    return out


def report(label: str, samples: list[float], base: list[float]) -> None:
    """One line: requests/s, median, p99, and ratios against the baseline."""
    rps = len(samples) / sum(samples)
    print(
        f"{label:34} {rps:8.0f} req/s  median {ms(median(samples)):>11}  p99 {ms(pct(samples, 99)):>11}"
        f"  ratio median {median(samples) / median(base):5.1f}x  p99 {pct(samples, 99) / pct(base, 99):5.1f}x"
    )


def bare_main(answers_file: str) -> None:
    """Serve recorded answers from memory with a bare Starlette endpoint (the load baseline)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from mirror.serve.runner import bind, serve_http, url_of

    with open(answers_file, "rb") as f:
        answers: dict[bytes, bytes] = pickle.load(f)

    async def endpoint(request: Request) -> Response:
        key = request.url.path.encode() + b"?" + request.url.query.encode() + await request.body()
        return Response(answers[key], media_type="application/json")

    app = Starlette(routes=[Route("/{path:path}", endpoint, methods=["GET", "POST"])])
    sock = bind("127.0.0.1", 0)
    print(f"bare: {url_of(sock)}", file=sys.stderr, flush=True)
    serve_http(app, sock)


def load_requests(url: str, draws: list[list[str]]) -> dict[str, list[tuple[bytes, bytes]]]:
    """REST and MCP requests for the draws, each with the server's answer key for the bare one."""
    rest, mcp = [], []
    for i, names in enumerate(draws):
        query = urlencode([("names", n) for n in names])
        target = "/v1/documents:batchGet?" + query
        rest.append((request_bytes(url, "GET", target), f"/v1/documents:batchGet?{query}".encode()))
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "get_documents", "arguments": {"names": names}},
            }
        ).encode()
        headers = {"Content-Type": "application/json", **MCP_HEADERS}
        mcp.append((request_bytes(url, "POST", "/mcp", body, **headers), b"/mcp?" + body))
    return {"REST batchGet": rest, "MCP tools/call": mcp}


def load_part(
    db: Path, names: list[str], seconds: float, levels: list[int], requests: int = 200
) -> None:
    """The issue 9 table: the mirror and the bare endpoint at 1, 8, 32 and 64 clients,
    sending `requests` distinct requests round-robin."""
    rng = random.Random(7)
    draws = [rng.sample(names, 20) for _ in range(requests)]
    process, url = start_server(db)
    bare = None
    try:
        kinds = load_requests(url, draws)
        # Record the mirror's own answers: the bare endpoint returns exactly these bytes.
        answers: dict[bytes, bytes] = {}
        with httpx.Client(base_url=url, timeout=30) as http:
            for kind, pairs in kinds.items():
                for (_raw, key), names_ in zip(pairs, draws, strict=True):
                    if kind.startswith("REST"):
                        params = [("names", n) for n in names_]
                        answer = http.get("/v1/documents:batchGet", params=params)
                    else:
                        body = key.split(b"?", 1)[1]
                        headers = {"Content-Type": "application/json", **MCP_HEADERS}
                        answer = http.post("/mcp", content=body, headers=headers)
                    answer.raise_for_status()
                    answers[key] = answer.content
        with tempfile.NamedTemporaryFile(suffix=".pickle", delete=False) as f:
            pickle.dump(answers, f)
        bare, bare_url = _start([sys.executable, "-m", "bench.bench_serve", "--bare", f.name])
        size = sum(len(v) for v in answers.values()) / len(answers)
        print(
            f"load: {seconds:.0f} s per level, keep-alive clients, 20 names per request, "
            f"{size / 1000:.0f} kB per answer on average; bare = Starlette returning the same "
            f"bytes from memory, its own process"
        )
        for kind, pairs in kinds.items():
            requests = [raw for raw, _key in pairs]
            bare_requests = [
                raw.replace(url.split("//")[1].encode(), bare_url.split("//")[1].encode(), 1)
                for raw, _key in pairs
            ]
            rows = []
            for clients in levels:
                ours, base = alternating(
                    (url, requests), (bare_url, bare_requests), clients, seconds
                )
                rows.append((clients, ours, base))
            for clients, ours, base in rows:
                print(
                    f"{kind:15} {clients:3} clients  mirror {ours.rps:6.0f} req/s "
                    f"p50 {ms(pct(ours.latencies, 50)):>11} p99 {ms(pct(ours.latencies, 99)):>11}"
                    f"  errors {ours.errors}  |  bare {base.rps:6.0f} req/s "
                    f"p99 {ms(pct(base.latencies, 99)):>11}  |  p99 ratio "
                    f"{pct(ours.latencies, 99) / pct(base.latencies, 99):4.1f}x (target <= 3x)"
                )
            ours_by, bare_by = {c: o.rps for c, o, _b in rows}, {c: b.rps for c, _o, b in rows}
            if not {8, 64} <= set(levels):
                continue
            # The bare endpoint's own change shows what the machine's load did between levels.
            print(
                f"{kind:15} throughput 64 vs 8 clients: {ours_by[64] / ours_by[8]:.2f}x "
                f"(target >= 1.0x: flat or rising); bare {bare_by[64] / bare_by[8]:.2f}x; "
                f"mirror/bare {ours_by[8] / bare_by[8]:.2f} at 8, {ours_by[64] / bare_by[64]:.2f} at 64"
            )
        os.unlink(f.name)
    finally:
        for proc in (process, bare):
            if proc is not None:
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=30)


def main() -> None:
    """Fill a store from the corpus, serve it, then run the load table and/or the paths."""
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--rounds", type=int, default=500, help="paths: gets timed; load: min(200, N) requests"
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="per load level")
    parser.add_argument("--part", choices=("load", "paths", "both"), default="both")
    parser.add_argument(
        "--levels", type=int, nargs="+", default=list(LEVELS), help="keep-alive clients per level"
    )
    parser.add_argument("--bare", metavar="ANSWERS", help=argparse.SUPPRESS)
    add_corpus_option(parser)
    args = parser.parse_args()
    if args.bare:
        bare_main(args.bare)
        return
    corpus = english_corpus(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        # Words only: this bench times reads; the embedding every write now adds by default
        # is bench_import_embed's to time, and would only slow the set-up here.
        mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True, semantic=False))
        mirror.import_file(corpus)
        names = [s.name for s in mirror.list_documents()]
        if args.part in ("load", "both"):
            load_part(db, names, args.seconds, args.levels, min(200, args.rounds))
        if args.part in ("paths", "both"):
            paths_part(mirror, db, names, args.rounds)
        mirror.close()


def paths_part(mirror: Mirror, db: Path, names: list[str], rounds: int) -> None:
    """One client at a time: REST, raw JSON-RPC and the SDK against Mirror.get_documents."""
    warm = 30
    rng = random.Random(42)
    draws = [rng.sample(names, 20) for _ in range(rounds + warm)]
    process, url = start_server(db)
    try:
        with httpx.Client(base_url=url, timeout=30) as http:

            def rest(i: list[int]) -> Callable[[], Any]:
                def call() -> Any:
                    params = [("names", n) for n in draws[i[0] % len(draws)]]
                    i[0] += 1
                    response = http.get("/v1/documents:batchGet", params=params)
                    response.raise_for_status()
                    return response.json()

                return call

            def raw_mcp(i: list[int]) -> Callable[[], Any]:
                def call() -> Any:
                    arguments = {"names": draws[i[0] % len(draws)]}
                    i[0] += 1
                    body = {
                        "jsonrpc": "2.0",
                        "id": i[0],
                        "method": "tools/call",
                        "params": {"name": "get_documents", "arguments": arguments},
                    }
                    response = http.post("/mcp", json=body, headers=MCP_HEADERS)
                    response.raise_for_status()
                    return response.json()

                return call

            def direct(i: list[int]) -> Callable[[], Any]:
                def call() -> Any:
                    result = mirror.get_documents(draws[i[0] % len(draws)])
                    i[0] += 1
                    return result

                return call

            timed(direct([0]), warm)
            base = timed(direct([warm]), rounds)
            timed(rest([0]), warm)
            rest_t = timed(rest([warm]), rounds)
            sizes = [
                len(http.get("/v1/documents:batchGet", params=[("names", n) for n in d]).content)
                for d in draws[:50]
            ]
            payload = sum(sizes) / len(sizes)
            timed(raw_mcp([0]), warm)
            raw_t = timed(raw_mcp([warm]), rounds)
        sdk_t = mcp_sdk_times(url, draws, warm)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
    print(
        f"get_documents of 20 cached names, {rounds} rounds, {len(names)} documents in "
        f"store, {payload / 1000:.0f} kB per REST answer on average"
    )
    report("Mirror.get_documents (in process)", base, base)
    report("REST batchGet (httpx keep-alive)", rest_t, base)
    report("MCP tools/call (raw JSON-RPC)", raw_t, base)
    report("MCP tools/call (mcp SDK Client)", sdk_t, base)
    print("baseline: Mirror.get_documents in this process; no target (the load part holds them)")


if __name__ == "__main__":
    main()
