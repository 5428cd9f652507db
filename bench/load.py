"""A small closed-loop HTTP/1.1 load generator for the serve benchmark.

Each client is one keep-alive connection sending its next request as soon as the last answer
is read. Requests and answers are handled on raw asyncio streams: an httpx client costs more
CPU per request than the server under test, and on a 2-core machine the generator would
measure itself. Only what uvicorn sends is parsed (status line, Content-Length bodies).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Level:
    """What `clients` connections achieved in one timed run."""

    clients: int
    latencies: list[float]
    errors: int
    seconds: float

    @property
    def rps(self) -> float:
        """Answered requests per second of wall time."""
        return len(self.latencies) / self.seconds


def request_bytes(url: str, method: str, target: str, body: bytes = b"", **headers: str) -> bytes:
    """One HTTP/1.1 request, keep-alive, ready to write again and again."""
    host = urlsplit(url).netloc
    lines = [
        f"{method} {target} HTTP/1.1",
        f"Host: {host}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    if method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii") + body


async def _answer(reader: asyncio.StreamReader) -> int:
    """Read one response; return its status."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _client(
    url: str, requests: list[bytes], offset: int, stop: float, out: list[float], errors: list[int]
) -> None:
    parts = urlsplit(url)
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    i = offset
    try:
        while time.perf_counter() < stop:
            start = time.perf_counter()
            writer.write(requests[i % len(requests)])
            i += 1
            if await _answer(reader) == 200:
                out.append(time.perf_counter() - start)
            else:
                errors[0] += 1
    finally:
        writer.close()


def run_level(url: str, requests: list[bytes], clients: int, seconds: float) -> Level:
    """`clients` keep-alive connections sending `requests` round-robin for `seconds`."""
    return run_spread([(url, requests)], clients, seconds)


def run_spread(targets: list[tuple[str, list[bytes]]], clients: int, seconds: float) -> Level:
    """`clients` keep-alive connections spread round-robin over several servers (each target:
    a server's URL and the requests addressed to it), for `seconds`."""

    async def main() -> Level:
        latencies: list[float] = []
        errors = [0]
        start = time.perf_counter()
        stop = start + seconds
        await asyncio.gather(
            *(
                _client(*targets[i % len(targets)], i * 7, stop, latencies, errors)
                for i in range(clients)
            )
        )
        return Level(clients, latencies, errors[0], time.perf_counter() - start)

    return asyncio.run(main())
