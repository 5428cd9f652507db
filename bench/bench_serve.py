"""get_documents of 20 cached names through `dk-mirror serve` (HTTP MCP and REST) vs the Mirror call.

Usage: python -m bench.bench_serve [--rounds N]
The server is a real `dk-mirror serve` process (read-only, the corpus in its store); each client
keeps one connection alive: httpx.Client for REST and raw JSON-RPC, one mcp Client session for
the SDK. Baseline: Mirror.get_documents on the same store, in this process, in the same run.
"""

from __future__ import annotations

import argparse
import os
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

import anyio
import httpx

from bench.common import add_corpus_option, english_corpus, median, ms, pct, timed
from mirror.config import Settings
from mirror.service import Mirror

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def start_server(db: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`dk-mirror serve --port 0` on the store; returns the process and its base URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DK_MIRROR", "DEVELOPER_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "serve", "--port", "0", "--db", str(db)],
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
            match = re.search(rb"dk-mirror serve: (http://[\d.]+:\d+)", seen)
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


def main() -> None:
    """Fill a store from the corpus, serve it, then time the four paths on the same draws."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=500)
    add_corpus_option(parser)
    args = parser.parse_args()
    corpus = english_corpus(args.corpus)
    warm = 30
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.sqlite3"
        mirror = Mirror(Settings(db_url=f"sqlite:///{db}", offline=True))
        mirror.import_file(corpus)
        names = [s.name for s in mirror.list_documents()]
        rng = random.Random(42)
        draws = [rng.sample(names, 20) for _ in range(args.rounds + warm)]
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
                base = timed(direct([warm]), args.rounds)
                timed(rest([0]), warm)
                rest_t = timed(rest([warm]), args.rounds)
                sizes = [
                    len(
                        http.get("/v1/documents:batchGet", params=[("names", n) for n in d]).content
                    )
                    for d in draws[:50]
                ]
                payload = sum(sizes) / len(sizes)
                timed(raw_mcp([0]), warm)
                raw_t = timed(raw_mcp([warm]), args.rounds)
            sdk_t = mcp_sdk_times(url, draws, warm)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=30)
            mirror.close()
    print(
        f"get_documents of 20 cached names, {args.rounds} rounds, {len(names)} documents in "
        f"store, {payload / 1000:.0f} kB per REST answer on average"
    )
    report("Mirror.get_documents (in process)", base, base)
    report("REST batchGet (httpx keep-alive)", rest_t, base)
    report("MCP tools/call (raw JSON-RPC)", raw_t, base)
    report("MCP tools/call (mcp SDK Client)", sdk_t, base)


if __name__ == "__main__":
    main()
