"""`dk-mirror serve` under concurrent load: many keep-alive clients, then a probe must answer.

Before the fix every worker thread held one pooled connection, so once more threads than the
pool's 15 connections had served a request, every later request waited 30 s and failed.
"""

from __future__ import annotations

import ssl
import time
from typing import Any

import anyio
import httpx
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.serial]

CLIENTS = 64
# Seconds of load; long enough for the server to grow its whole thread pool.
LOAD_SECONDS = 4.0
# Far below the pool's 30 s checkout wait, far above a healthy answer on a loaded machine.
REQUEST_TIMEOUT = 10.0
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _names(mirror: Any, count: int) -> list[str]:
    return [s.name for s in mirror.list_documents(limit=count)]


def test_64_keep_alive_clients_then_a_probe_all_answer(sample_mirror, serve_app):
    from mcp import Client

    url = serve_app(sample_mirror)
    names = _names(sample_mirror, 20)
    outcomes: dict[str, int] = {"sent": 0, "ok": 0, "error": 0, "timeout": 0}
    problems: list[str] = []

    def record(kind: str, detail: str = "") -> None:
        outcomes[kind] += 1
        if detail and len(problems) < 5:
            problems.append(detail)

    # One TLS context for all (unused on http://, but each client would build its own: slow).
    tls = ssl.create_default_context()
    # Clients connect first and start together: building 64 clients takes seconds here.
    ready = anyio.Semaphore(0)
    go = anyio.Event()
    stop = 0.0

    async def start_line() -> None:
        ready.release()
        await go.wait()

    async def rest_client(index: int) -> None:
        params = [("names", n) for n in names[index % 5 :][:5]]
        async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT, verify=tls) as http:
            await start_line()
            while time.monotonic() < stop:
                outcomes["sent"] += 1
                try:
                    response = await http.get("/v1/documents:batchGet", params=params)
                except httpx.TimeoutException:
                    record("timeout", "REST timed out")
                    continue
                if response.status_code == 200 and len(response.json()["documents"]) == 5:
                    record("ok")
                else:
                    record("error", f"REST {response.status_code}: {response.text[:200]}")

    async def raw_mcp_client(index: int) -> None:
        body = {
            "jsonrpc": "2.0",
            "id": index,
            "method": "tools/call",
            "params": {"name": "get_documents", "arguments": {"names": names[:3]}},
        }
        async with httpx.AsyncClient(base_url=url, timeout=REQUEST_TIMEOUT, verify=tls) as http:
            await start_line()
            while time.monotonic() < stop:
                outcomes["sent"] += 1
                try:
                    response = await http.post("/mcp", json=body, headers=MCP_HEADERS)
                except httpx.TimeoutException:
                    record("timeout", "MCP timed out")
                    continue
                result = response.json().get("result", {}) if response.status_code == 200 else {}
                if result and not result.get("isError"):
                    record("ok")
                else:
                    record("error", f"MCP {response.status_code}: {response.text[:200]}")

    async def sdk_client() -> None:
        async with Client(url + "/mcp") as client:
            await start_line()
            while time.monotonic() < stop:
                outcomes["sent"] += 1
                with anyio.move_on_after(REQUEST_TIMEOUT) as scope:
                    result = await client.call_tool("get_documents", {"names": names[5:8]})
                if scope.cancelled_caught:
                    record("timeout", "MCP SDK timed out")
                elif result.is_error:
                    record("error", f"MCP SDK: {result.content}")
                else:
                    record("ok")

    async def load() -> None:
        nonlocal stop
        async with anyio.create_task_group() as group:
            for i in range(CLIENTS):
                # Half REST, the rest MCP: mostly raw JSON-RPC, a few through the SDK client.
                if i % 2 == 0:
                    group.start_soon(rest_client, i)
                elif i % 8 == 1:
                    group.start_soon(sdk_client)
                else:
                    group.start_soon(raw_mcp_client, i)
            for _ in range(CLIENTS):
                await ready.acquire()
            stop = time.monotonic() + LOAD_SECONDS
            go.set()

    anyio.run(load)
    assert outcomes["error"] == 0 and outcomes["timeout"] == 0, (outcomes, problems)
    # Every request sent got an answer, and every client got at least one.
    assert outcomes["ok"] == outcomes["sent"] >= CLIENTS, outcomes
    # The server recovers (it never wedged): one more request answers at once.
    probe = httpx.get(url + "/v1/" + names[0], timeout=REQUEST_TIMEOUT)
    assert probe.status_code == 200 and probe.json()["name"] == names[0]
