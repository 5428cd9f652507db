"""/mcp answers the same bytes with the replay of get_documents (mcp_replay.py) as without it.

Two servers on one store (the whole app, in-process), one replaying the SDK's earlier answers
and one sending every request through the SDK, are sent the same requests; status, headers and
body must agree, whatever the request: hits, misses, errors, notifications, odd headers,
refused callers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from starlette.testclient import TestClient

from mirror.service import Mirror
from mirror.store.store import Store
from tests.serve_fixtures import TOKEN

pytestmark = pytest.mark.sqlite_only("the replay sits above the store; one backend suffices")

ACCEPT = "application/json, text/event-stream"
# (the replay, a client of its app, a client of the plain SDK app)
Twins = tuple[Any, TestClient, TestClient]


@pytest.fixture
def twins(sample_mirror: Mirror, serve_client: Callable[..., TestClient]) -> Twins:
    """(the replay, a client of its app, a client of the plain SDK app), both requiring TOKEN."""
    from mirror.serve.mcp_replay import McpReplay

    ours, sdk = (serve_client(sample_mirror, replay=r, token=TOKEN) for r in (True, False))
    replays = [
        endpoint
        for app in (ours.app, sdk.app)
        for endpoint in (getattr(r, "endpoint", None) for r in app.routes)  # type: ignore[attr-defined]
        if isinstance(endpoint, McpReplay)
    ]
    assert len(replays) == 1
    return replays[0], ours, sdk


def names_of(mirror: Mirror, count: int) -> list[str]:
    return [s.name for s in mirror.list_documents(limit=count)]


def call(request_id: Any, arguments: Any, **extra: Any) -> bytes:
    params = {"name": "get_documents", "arguments": arguments}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return json.dumps({**message, **extra}).encode()


def answer(
    client: TestClient, body: bytes, headers: dict[str, str | None]
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers (without Date) and body, the server's port written as PORT."""
    port = str(client.base_url.port)
    sent: dict[str, str | None] = {
        "Accept": ACCEPT,
        "Content-Type": "application/json",
        "Authorization": f"Bearer {TOKEN}",
        **headers,
    }
    kept_sent = {k: v.replace("PORT", port) for k, v in sent.items() if v is not None}
    reply = client.post("/mcp", content=body, headers=kept_sent)
    kept = {k: v.replace(port, "PORT") for k, v in reply.headers.items() if k != "date"}
    return reply.status_code, kept, reply.content.replace(port.encode(), b"PORT")


def same_answers(
    replay: TestClient,
    plain: TestClient,
    cases: list[tuple[bytes, dict[str, str | None]]],
    times: int = 2,
) -> list[tuple[int, dict[str, str], bytes]]:
    """Each case `times` over to both servers; asserts equal answers and returns them."""
    seen = []
    for body, headers in cases:
        for _ in range(times):
            ours = answer(replay, body, headers)
            sdk = answer(plain, body, headers)
            assert ours == sdk, (body[:200], headers)
            seen.append(ours)
    return seen


@pytest.mark.slow
def test_replayed_get_documents_are_the_sdk_bytes_with_their_own_id(
    twins: Twins, sample_mirror: Mirror
) -> None:
    replay, ours, sdk = twins
    twenty = names_of(sample_mirror, 20)
    ids: list[Any] = [1, 2, "a", 'é \u2028 "q" \\ /', 0, -7, 2**40, ""]
    cases: list[tuple[bytes, dict[str, str | None]]] = [
        (call(i, {"names": twenty}), {}) for i in ids
    ]
    cases += [(call(9, {"names": twenty[:1]}), {}), (call(10, {"names": twenty[::-1]}), {})]
    seen = same_answers(ours, sdk, cases)
    assert all(status == 200 for status, _, _ in seen)
    assert [json.loads(body)["id"] for _, _, body in seen[::2][: len(ids)]] == ids
    result = json.loads(seen[0][2])["result"]
    assert [d["name"] for d in result["structuredContent"]["documents"]] == twenty
    # Every repeat after the first of each name list was replayed, not sent to the SDK.
    assert replay.hits == 2 * len(cases) - 3


@pytest.mark.parametrize(
    "headers",
    [
        {"MCP-Protocol-Version": "2025-06-18"},
        {"MCP-Protocol-Version": "2025-03-26"},
        {"MCP-Protocol-Version": "2024-11-05"},
        {"MCP-Protocol-Version": "2099-01-01"},
        {"MCP-Protocol-Version": "bogus"},
        {"Mcp-Session-Id": "0123456789abcdef"},
        {"Accept": "application/json"},
        {"Accept": "text/event-stream"},
        {"Accept": "text/html"},
        {"Content-Type": "text/plain"},
        {"Origin": "http://127.0.0.1:PORT"},
        {"Origin": "http://127.0.0.1:1"},
        {"Origin": "https://evil.example"},
        {"Host": "evil.example"},
        {"Host": "localhost:PORT"},
        {"Authorization": "Bearer wrong-token-0123456789"},
        {"Authorization": ""},
    ],
)
def test_headers_decide_the_same_way_with_and_without_the_replay(
    twins: Twins, sample_mirror: Mirror, headers: dict[str, str | None]
) -> None:
    _replay, ours, sdk = twins
    body = call(5, {"names": names_of(sample_mirror, 3)})
    # Once plainly (the answer is kept), then with the header: never the kept answer's twin.
    same_answers(ours, sdk, [(body, {}), (body, headers)])


@pytest.mark.slow
def test_errors_notifications_and_other_calls_are_the_sdks(
    twins: Twins, sample_mirror: Mirror
) -> None:
    _replay, ours, sdk = twins
    names = names_of(sample_mirror, 2)
    missing = "documents/developer.chrome.com/docs/no/such/page"
    notification = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "get_documents"}}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    bodies = [
        call(1, {"names": [*names, missing]}),  # a tool error: not cached upstream of the store
        call(2, {"names": ["../etc/passwd"]}),
        call(3, {"names": [f"documents/x/{i}" for i in range(21)]}),
        call(4, {"names": []}),
        call(5, {"names": "documents/x"}),
        call(6, {"names": [1, 2]}),
        call(7, {"names": names, "extra": 1}),
        call(8, {}),
        call(9, {"names": names}, jsonrpc="1.0"),
        call(10.5, {"names": names}),
        call(True, {"names": names}),
        call(None, {"names": names}),
        call("\ud800", {"names": names}),  # an id UTF-8 cannot carry
        call(18, {"names": [names[0] + "\udc00"]}),
        call(
            11,
            {"names": names},
            params={"name": "get_documents", "arguments": {"names": names}, "_meta": {}},
        ),
        json.dumps(notification).encode(),
        json.dumps([json.loads(call(12, {"names": names}))]).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 13, "method": "tools/list"}).encode(),
        json.dumps(initialize).encode(),
        b'{"jsonrpc":"2.0","id":14,"id":15,"method":"tools/call","params":'
        + json.dumps({"name": "get_documents", "arguments": {"names": names}}).encode()
        + b"}",
        b"\xef\xbb\xbf" + call(16, {"names": names}),
        call(17, {"names": names})[:-5],
        b"\xff\xfe",
        b"",
    ]
    same_answers(ours, sdk, [(b, {}) for b in bodies])
    # And methods other than POST (a GET would open an event stream that stays open).
    for method in ("DELETE", "PUT"):
        replies = []
        for client in (ours, sdk):
            headers = {"Accept": ACCEPT, "Authorization": f"Bearer {TOKEN}"}
            reply = client.request(method, "/mcp", headers=headers)
            replies.append((reply.status_code, reply.content))
        assert replies[0] == replies[1]


def test_a_changed_store_is_never_answered_from_an_older_answer(
    twins: Twins, sample_mirror: Mirror
) -> None:
    replay, ours, sdk = twins
    names = names_of(sample_mirror, 2)
    body = call(1, {"names": names})
    same_answers(ours, sdk, [(body, {})])
    hits = replay.hits
    doc = sample_mirror.get_documents(names).documents[0]
    changed = replace(doc, content="rewritten while the server runs")
    writer = Store.open(sample_mirror.settings.db_url)  # as another process would
    try:
        writer.put([changed.with_derived_fields()], fetched_at=9.0, upstream="test")
    finally:
        writer.close()
    status, _, sent = answer(ours, body, {})
    assert status == 200 and replay.hits == hits  # the kept answer was for the older store
    text = json.loads(sent)["result"]["structuredContent"]["documents"][0]["content"]
    assert text == "rewritten while the server runs"
    same_answers(ours, sdk, [(body, {})])


def test_a_token_is_still_required_for_a_kept_answer(twins: Twins, sample_mirror: Mirror) -> None:
    _replay, ours, _sdk = twins
    body = call(1, {"names": names_of(sample_mirror, 1)})
    assert answer(ours, body, {})[0] == 200
    assert answer(ours, body, {"Authorization": None})[0] == 401
    assert answer(ours, body, {"Host": "evil.example"})[0] == 403
