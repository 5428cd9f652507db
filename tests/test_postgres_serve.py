"""A team mirror: three `dk-mirror serve` processes on one PostgreSQL database answer 64
concurrent clients (REST batchGet and MCP get_documents mixed) while a crawler writes into
the same database: zero errors, every answer byte-for-byte the answer given before the load."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from mirror.models import Document
from mirror.store.store import Store
from tests.emulator import Emulator
from tests.emulator_fixtures import corpus_documents
from tests.test_postgres_crawlers import HOST, PAGES, linked_pages
from tests.test_serve_security import wait_for_port
from tests.user_env import user_env

pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.timeout(300)]

SERVERS = 3
CLIENTS = 64
LOAD_SECONDS = 5.0
REQUEST_TIMEOUT = 20.0
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
REPO = Path(__file__).resolve().parents[1]


def _env(db_url: str, home: Path, **extra: str) -> dict[str, str]:
    env = user_env()
    return {**env, "DK_MIRROR_DB": db_url, "DK_MIRROR_HOME": str(home), **extra,
            "PYTHONPATH": str(REPO)}  # fmt: skip


@contextlib.contextmanager
def serving(db_url: str, home: Path, count: int) -> Iterator[list[str]]:
    """`count` real `dk-mirror serve` processes on `db_url`; their base URLs."""
    with contextlib.ExitStack() as stack:
        urls = []
        for _ in range(count):
            process = stack.enter_context(
                subprocess.Popen(
                    [sys.executable, "-m", "mirror", "serve", "--port", "0"],
                    env=_env(db_url, home),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
            )
            stack.callback(_stop, process)
            urls.append(f"http://127.0.0.1:{wait_for_port(process)}")
        yield urls


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _requests(names: list[str]) -> list[tuple[str, str, object]]:
    """The mixed requests: (kind, path, params or JSON-RPC body); fixed ids, so fixed bytes."""
    out: list[tuple[str, str, object]] = []
    for i in range(0, len(names) - 5, 5):
        out.append(("rest", "/v1/documents:batchGet", [("names", n) for n in names[i : i + 5]]))
        call = {"name": "get_documents", "arguments": {"names": names[i + 1 : i + 4]}}
        body = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": call}
        out.append(("mcp", "/mcp", body))
    return out


async def _send(http: httpx.AsyncClient, request: tuple[str, str, object]) -> httpx.Response:
    kind, path, payload = request
    if kind == "rest":
        return await http.get(path, params=payload)  # type: ignore[arg-type]
    return await http.post(path, json=payload, headers=MCP_HEADERS)


def _load(urls: list[str], requests: list[tuple[str, str, object]], expected: list[bytes]):  # type: ignore[no-untyped-def]
    """64 clients over the servers for LOAD_SECONDS; (answers checked, problems)."""
    checked = [0]
    problems: list[str] = []

    async def client(index: int, go: anyio.Event) -> None:
        url = urls[index % len(urls)]
        async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as http:
            await go.wait()
            stop = time.monotonic() + LOAD_SECONDS
            turn = index
            while time.monotonic() < stop:
                which = turn % len(requests)
                turn += 1
                try:
                    response = await _send(http, requests[which])
                except httpx.HTTPError as exc:
                    problems.append(f"{url}: {type(exc).__name__}")
                    continue
                checked[0] += 1
                if response.status_code != 200 or response.content != expected[which]:
                    problems.append(f"{url} {requests[which][0]} {response.status_code}")

    async def run() -> None:
        go = anyio.Event()
        async with anyio.create_task_group() as group:
            for i in range(CLIENTS):
                group.start_soon(client, i, go)
            await anyio.sleep(0.5)  # every client built before any starts
            go.set()

    anyio.run(run)
    return checked[0], problems


def test_three_servers_on_one_database_answer_64_clients_exactly_while_a_crawler_writes(
    pg_url: str, tmp_path: Path
) -> None:
    docs = [Document.from_api(d) for d in corpus_documents("tensorflow.org")[:60]]
    store = Store.open(pg_url)
    try:
        store.put(docs, fetched_at=1_700_000_000.0, upstream="rest http://up.test")
    finally:
        store.close()
    requests = _requests([d.name for d in docs])

    with Emulator(linked_pages()) as upstream, serving(pg_url, tmp_path, SERVERS) as urls:
        # The answers before any load, from the first server; the others must agree.
        expected = []
        for request in requests:
            answers = set()
            for url in urls:
                response = anyio.run(_send_once, url, request)
                assert response.status_code == 200, response.text
                answers.add(response.content)
            assert len(answers) == 1
            answer = answers.pop()
            # Real documents, not an error: the names asked for come back with their text.
            call = request[2]
            asked = call["params"]["arguments"]["names"] if isinstance(call, dict) else []  # type: ignore[index]
            assert (
                all(name.encode() in answer for name in asked) and b'"isError":true' not in answer
            )
            expected.append(answer)
        # The crawler writes into the same database throughout the load (other pages).
        crawler = subprocess.Popen(
            [sys.executable, "-m", "mirror", "crawl", f"documents/{HOST}/team/page-0000",
             "--prefix", f"{HOST}/team/", "--depth", "10", "--json"],
            env=_env(pg_url, tmp_path, DK_MIRROR_UPSTREAM=upstream.base_url,
                     DEVELOPER_KNOWLEDGE_API_KEY=upstream.api_key or "",
                     DK_MIRROR_GET_PER_MINUTE="6000"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            started = time.monotonic()
            checked, problems = _load(urls, requests, expected)
            ended = time.monotonic()
        finally:
            _out, err = crawler.communicate(timeout=300)
        # The emulator's clock is time.monotonic: the crawl's calls during the load.
        during = [r for r in upstream.requests if started <= r.at <= ended]
    assert crawler.returncode == 0, err.decode()
    assert problems == [], (len(problems), problems[:10])
    assert checked >= CLIENTS * 3, checked
    stored = Store.open(pg_url)
    try:
        assert stored.stats().with_content == len(docs) + PAGES  # the crawl landed in full
    finally:
        stored.close()
    # The crawl fetched (and so wrote) during the load, else "while a crawler writes" proved
    # nothing.
    assert during, "the crawl did not overlap the load"


async def _send_once(url: str, request: tuple[str, str, object]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT) as http:
        return await _send(http, request)
