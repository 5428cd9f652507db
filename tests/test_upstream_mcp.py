"""The MCP client against the emulator's /mcp over real HTTP, in each plausible server mode."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import httpx
import pytest

from mirror.config import Settings
from mirror.errors import (
    AuthError,
    BadRequest,
    MirrorError,
    NotFound,
    PermissionDenied,
    ProtocolError,
    QuotaExceeded,
)
from mirror.models import View
from mirror.upstream import open_upstream
from mirror.upstream.batching import iter_fetch
from mirror.upstream.mcp import McpUpstream
from mirror.upstream.pacing import Pacer
from mirror.upstream.retry import RetryPolicy
from tests.emulator import Emulator
from tests.emulator_fixtures import corpus_documents

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

CANARY = "AIzaSyCANARY-mcp-0a1b2c3d4e5f-never-leak"
NO_WAIT = RetryPolicy(sleep=lambda _s: None)
GHOST = "documents/www.tensorflow.org/no/such/page"


def open_mcp(emulator: Emulator, key: str | None = "test-key") -> McpUpstream:
    settings = Settings(
        db_url="sqlite://", upstream=emulator.base_url, transport="mcp", api_key=key
    )
    upstream = open_upstream(settings, retry=NO_WAIT)
    assert isinstance(upstream, McpUpstream)
    return upstream


@pytest.fixture
def mcp(emulator: Emulator) -> Iterator[McpUpstream]:
    upstream = open_mcp(emulator)
    yield upstream
    upstream.close()


@pytest.fixture
def names() -> list[str]:
    """Names of the tensorflow.org documents the emulator fixture holds."""
    return [
        r.get("name") or "documents/" + r["uri"].split("://", 1)[1]
        for r in corpus_documents("tensorflow.org")
    ]


def tool_calls(emulator: Emulator) -> int:
    return emulator.count(path="/mcp", tool="get_documents")


def rpc_methods(emulator: Emulator) -> list[str | None]:
    return [r.jsonrpc_method for r in emulator.requests]


@pytest.mark.parametrize("structured", [True, False])
@pytest.mark.parametrize("sse", [False, True])
def test_documents_in_every_encoding(
    mcp: McpUpstream, emulator: Emulator, names: list[str], structured: bool, sse: bool
) -> None:
    emulator.mcp_structured = structured
    emulator.mcp_sse = sse
    wanted = [names[9], names[2], names[30]]
    docs = mcp.batch_get(wanted)
    assert [d.name for d in docs] == wanted
    assert all(d.content and d.uri and d.title is not None for d in docs)
    # MCP Documents lack dataSource; it is derived from the name's host.
    assert {d.data_source for d in docs} == {"www.tensorflow.org"}
    assert rpc_methods(emulator) == ["tools/call"]  # no handshake unless the server asks


def test_request_shape(mcp: McpUpstream, emulator: Emulator, names: list[str]) -> None:
    mcp.batch_get(names[:2])
    (request,) = emulator.requests
    assert request.method == "POST" and request.path == "/mcp"
    assert request.json["jsonrpc"] == "2.0" and request.json["method"] == "tools/call"
    assert request.json["params"] == {"name": "get_documents", "arguments": {"names": names[:2]}}
    assert request.headers["accept"] == "application/json, text/event-stream"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-goog-api-key"] == "test-key"
    assert request.headers["user-agent"].startswith("dk-mirror/")


def test_basic_view_drops_content(mcp: McpUpstream, names: list[str]) -> None:
    (doc,) = mcp.batch_get(names[:1], View.BASIC)
    assert doc.content is None and doc.title is not None
    assert mcp.get(names[1]).content


@pytest.mark.parametrize("sse", [False, True])
def test_session_required_mode_initializes_once(
    mcp: McpUpstream, emulator: Emulator, names: list[str], sse: bool
) -> None:
    emulator.mcp_require_session = True
    emulator.mcp_sse = sse
    assert [d.name for d in mcp.batch_get(names[:2])] == names[:2]
    assert [d.name for d in mcp.batch_get(names[2:4])] == names[2:4]
    assert rpc_methods(emulator) == [
        "tools/call",  # refused: no session
        "initialize",
        "notifications/initialized",
        "tools/call",
        "tools/call",  # the session is kept
    ]
    session = emulator.requests[-1].headers["mcp-session-id"]
    assert session and emulator.requests[-2].headers["mcp-session-id"] == session
    assert emulator.requests[-1].headers["mcp-protocol-version"]


def test_an_expired_session_is_reopened(
    mcp: McpUpstream, emulator: Emulator, names: list[str]
) -> None:
    emulator.mcp_require_session = True
    mcp.batch_get(names[:1])
    emulator._sessions.clear()  # the server forgets every session
    assert [d.name for d in mcp.batch_get(names[1:2])] == names[1:2]
    assert rpc_methods(emulator).count("initialize") == 2


def test_sse_stream_with_other_events_first() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        rid = json.loads(request.read())["id"]
        body = (
            ": keep-alive comment\n\n"
            'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/progress",\n'
            'data:  "params": {}}\n\n'
            "event: message\n"
            f'data: {{"jsonrpc": "2.0", "id": {rid}, "result": {{"content": [{{"type": "text", '
            '"text": "{\\"documents\\": [{\\"name\\": \\"documents/a.dev/x\\"}]}"}]}}\n'
        )  # no final blank line: the stream just ends
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=body)

    client = httpx.Client(transport=httpx.MockTransport(handler))
    upstream = McpUpstream("http://up.test", "k", client, Pacer(100), NO_WAIT)
    assert [d.name for d in upstream.batch_get(["documents/a.dev/x"])] == ["documents/a.dev/x"]
    upstream.close()


@pytest.mark.parametrize("style", ["iserror", "jsonrpc", "http"])
@pytest.mark.parametrize(
    ("setup", "error", "hint"),
    [
        ("bad_key", AuthError, "DEVELOPER_KNOWLEDGE_API_KEY"),
        ("no_key", AuthError, "DEVELOPER_KNOWLEDGE_API_KEY"),
        (
            "api_disabled",
            PermissionDenied,
            "gcloud services enable developerknowledge.googleapis.com --project=PROJECT_ID",
        ),
        (
            "key_restricted",
            PermissionDenied,
            "--api-target=service=developerknowledge.googleapis.com",
        ),
        ("missing", NotFound, None),
        ("too_many", BadRequest, None),
    ],
)
def test_errors_map_like_rest_in_every_style(
    emulator: Emulator,
    names: list[str],
    style: str,
    setup: str,
    error: type[MirrorError],
    hint: str | None,
) -> None:
    emulator.mcp_error_style = style
    key = {"bad_key": "wrong-key", "no_key": None}.get(setup, "test-key")
    if setup in ("api_disabled", "key_restricted"):
        setattr(emulator, setup, True)
    wanted = [names[0], GHOST] if setup == "missing" else names[:2]
    upstream = open_mcp(emulator, key=key)
    try:
        with pytest.raises(error) as info:
            if setup == "too_many":
                # Bypass the client's own 20-name guard to see the server's answer mapped.
                upstream._call_tool(
                    "get_documents", {"names": names[:21]}, what="get_documents", names=names[:21]
                )
            else:
                upstream.batch_get(wanted)
    finally:
        upstream.close()
    if hint:
        assert hint in str(info.value)
    if setup == "missing":
        assert isinstance(info.value, NotFound) and info.value.names == [GHOST]
    assert tool_calls(emulator) == 1  # none of these is retried
    if key:
        assert key not in str(info.value)


@pytest.mark.parametrize("style", ["iserror", "jsonrpc", "http"])
def test_quota_exhaustion_is_retried_then_reported(
    emulator: Emulator, names: list[str], style: str
) -> None:
    emulator.mcp_error_style = style
    emulator.quota_per_minute = {"get": 1}
    upstream = open_mcp(emulator)
    try:
        upstream.batch_get(names[:1])
        with pytest.raises(QuotaExceeded) as info:
            upstream.batch_get(names[1:2])
    finally:
        upstream.close()
    if style == "http":
        # The HTTP answer carries Retry-After (about 60 s), past the 60 s deadline: stop at once.
        assert tool_calls(emulator) == 1 + 1
        assert "deadline" in str(info.value)
    else:
        assert tool_calls(emulator) == 1 + 5  # no Retry-After: backoff up to max_attempts
    assert "DK_MIRROR_GET_PER_MINUTE" in str(info.value)


@pytest.mark.parametrize("names_document", [True, False])
@pytest.mark.parametrize("style", ["iserror", "jsonrpc", "http"])
def test_iter_fetch_finds_missing_names_over_mcp(
    mcp: McpUpstream, emulator: Emulator, names: list[str], names_document: bool, style: str
) -> None:
    emulator.batch_404_names_document = names_document
    emulator.mcp_error_style = style
    wanted = [*names[:6], GHOST, *names[6:12]]
    (outcome,) = iter_fetch(mcp, wanted)
    assert outcome.missing == [GHOST]
    assert [d.name for d in outcome.documents] == [n for n in wanted if n != GHOST]
    assert tool_calls(emulator) <= (2 if names_document else 9)


def test_unknown_jsonrpc_method_errors_are_protocol_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32601, "message": "Method not supported"},
        }
        return httpx.Response(200, json=body)

    client = httpx.Client(transport=httpx.MockTransport(handler))
    upstream = McpUpstream("http://up.test", "k", client, Pacer(100), NO_WAIT)
    with pytest.raises(ProtocolError, match="-32601"):
        upstream.batch_get(["documents/a.dev/x"])
    upstream.close()


def test_the_key_never_leaks_over_mcp(
    emulator: Emulator, names: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    emulator.api_key = CANARY
    emulator.mcp_require_session = True
    texts: list[str] = []
    upstream = open_mcp(emulator, key=CANARY)
    texts += [repr(upstream), upstream.label]
    upstream.batch_get(names[:2])
    for style in ("iserror", "jsonrpc", "http"):
        emulator.mcp_error_style = style
        with pytest.raises(NotFound) as info:
            upstream.batch_get([GHOST])
        texts += [str(info.value), repr(info.value)]
    upstream.close()
    assert all(CANARY not in text for text in texts)
    assert CANARY not in caplog.text
    for request in emulator.requests:
        assert CANARY not in request.path and "key" not in request.query
    assert emulator.requests[0].headers["x-goog-api-key"] == CANARY


def test_a_missing_document_in_a_session_does_not_reopen_it(
    mcp: McpUpstream, emulator: Emulator, names: list[str]
) -> None:
    emulator.mcp_require_session = True
    emulator.mcp_error_style = "http"  # a plain HTTP 404, on a request that carries a session
    mcp.batch_get(names[:1])
    with pytest.raises(NotFound):
        mcp.batch_get([GHOST])
    assert rpc_methods(emulator).count("initialize") == 1
    assert tool_calls(emulator) == 3  # refused, then ok, then the 404
