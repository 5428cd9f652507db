"""answer_query over REST and MCP against the emulator: shapes, filters, quota, retries, the key."""

from __future__ import annotations

import logging

import pytest

from mirror.errors import BadRequest, InvalidInput, MirrorError, ProtocolError, QuotaExceeded
from mirror.models import Answer, DocumentChunk
from mirror.upstream import Upstream
from mirror.upstream.mcp_payloads import answer
from tests.emulator import Emulator, Fault
from tests.upstream_fixtures import open_client

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

CANARY = "AIzaSyCANARY-answer-6f5e4d3c2b1a-never-leak"
ANSWER_PATH = "/v1:answerQuery"
QUERY = "How do I write a custom Keras callback?"
CHROME = 'data_source = "developer.chrome.com"'


@pytest.fixture(params=["rest", "mcp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def where(transport: str) -> dict[str, str]:
    """The emulator filter that matches this transport's answer calls."""
    return {"path": ANSWER_PATH} if transport == "rest" else {"tool": "answer_query"}


# -- REST -------------------------------------------------------------------------------------


def test_rest_answer_keeps_citations_and_references(rest: Upstream, emulator: Emulator) -> None:
    result = rest.answer_query(QUERY)
    assert result.answer_text and result.citations and result.references
    text = result.answer_text.encode("utf-8")
    for citation in result.citations:
        # UTF-8 byte offsets into the answer, each naming a reference that exists.
        assert 0 <= citation.start_index < citation.end_index <= len(text)
        assert citation.reference_indexes
        assert all(0 <= i < len(result.references) for i in citation.reference_indexes)
    for chunk in result.references:
        assert chunk.parent.startswith("documents/") and chunk.content and chunk.id is None
        assert chunk.document is not None and chunk.document.name == chunk.parent
        assert chunk.document.title is not None and chunk.document.data_source
    (request,) = emulator.requests
    assert request.method == "POST" and request.path == ANSWER_PATH
    assert request.json == {"query": QUERY}  # no filter field unless one is given
    assert request.query == {}


def test_rest_answer_passes_the_filter(rest: Upstream, emulator: Emulator) -> None:
    result = rest.answer_query(QUERY, filter=CHROME)
    assert emulator.requests[-1].json == {"query": QUERY, "filter": CHROME}
    assert result.references
    assert all(
        c.document and c.document.data_source == "developer.chrome.com" for c in result.references
    )


def test_rest_bad_filter_is_a_bad_request(rest: Upstream, emulator: Emulator) -> None:
    with pytest.raises(BadRequest) as info:
        rest.answer_query(QUERY, filter="update_time >= yesterday")
    assert info.value.status == 400
    assert emulator.count(path=ANSWER_PATH) == 1


def test_rest_answer_round_trips_through_to_api(rest: Upstream) -> None:
    result = rest.answer_query(QUERY)
    assert Answer.from_api(result.to_api()) == result


# -- MCP --------------------------------------------------------------------------------------


def test_mcp_answer_gives_reference_names(
    mcp: Upstream, rest: Upstream, emulator: Emulator
) -> None:
    result = mcp.answer_query(QUERY)
    assert result.answer_text and result.citations == () and result.references
    assert all(c == DocumentChunk(parent=c.parent, id=None, content="") for c in result.references)
    # Same corpus, same grounding: the names REST's references point to.
    assert result.reference_names == rest.answer_query(QUERY).reference_names
    call = next(r for r in emulator.requests if r.tool == "answer_query")
    assert call.json["params"] == {"name": "answer_query", "arguments": {"query": QUERY}}


def test_mcp_refuses_a_filter_without_a_request(mcp: Upstream, emulator: Emulator) -> None:
    with pytest.raises(InvalidInput) as info:
        mcp.answer_query(QUERY, filter=CHROME)
    assert "filter" in info.value.message
    assert info.value.hint and "--transport rest" in info.value.hint
    assert emulator.count() == 0


def test_mcp_answer_shapes() -> None:
    names = ["documents/web.dev/a", "documents/web.dev/b"]
    parsed = answer({"answerText": "x", "references": names}, "test")
    assert parsed.reference_names == names and parsed.citations == ()
    assert answer({"answerText": "none"}, "test").references == ()
    with pytest.raises(ProtocolError, match="not a document name"):
        answer({"answerText": "x", "references": ["web.dev/a"]}, "test")
    with pytest.raises(ProtocolError):
        answer({"answerText": 3, "references": []}, "test")


# -- both transports --------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "y" * 501])
def test_bad_queries_are_refused_without_a_request(
    emulator: Emulator, transport: str, query: str
) -> None:
    upstream = open_client(emulator, transport)
    with pytest.raises(InvalidInput, match="INVALID_ARGUMENT"):
        upstream.answer_query(query)
    upstream.close()
    assert emulator.count() == 0


@pytest.mark.parametrize(
    ("transport", "style"),
    [("rest", None), ("mcp", "iserror"), ("mcp", "jsonrpc"), ("mcp", "http")],
)
def test_answer_quota_is_not_retried_and_points_to_search(
    emulator: Emulator, transport: str, style: str | None
) -> None:
    emulator.mcp_error_style = style or emulator.mcp_error_style
    emulator.answer_quota_per_day = 0  # used up for today: Retry-After says "tomorrow"
    upstream = open_client(emulator, transport)
    with pytest.raises(QuotaExceeded) as info:
        upstream.answer_query(QUERY)
    upstream.close()
    assert emulator.count(**where(transport)) == 1
    assert info.value.status == 429
    assert info.value.hint and "50 calls/day" in info.value.hint
    assert "dk-mirror search" in info.value.hint


def test_injected_429_on_answer_is_not_retried(emulator: Emulator, transport: str) -> None:
    emulator.inject(Fault("status", status=429, retry_after="1"), **where(transport))  # type: ignore[arg-type]
    upstream = open_client(emulator, transport)
    with pytest.raises(QuotaExceeded):
        upstream.answer_query(QUERY)
    # The 429 was spent on the one attempt; the next call goes through.
    assert upstream.answer_query(QUERY).answer_text
    upstream.close()
    assert emulator.count(**where(transport)) == 2


@pytest.mark.parametrize(
    "fault", [Fault("status", status=503), Fault("status", status=504), Fault("drop")]
)
def test_answer_transient_failures_are_retried(
    emulator: Emulator, transport: str, fault: Fault
) -> None:
    emulator.inject(fault, times=2, **where(transport))  # type: ignore[arg-type]
    upstream = open_client(emulator, transport)
    result = upstream.answer_query(QUERY)
    upstream.close()
    assert result.answer_text and result.references
    assert emulator.count(**where(transport)) == 3


def test_the_key_never_leaks(
    emulator: Emulator, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    emulator.api_key = CANARY
    upstream = open_client(emulator, transport, key=CANARY)
    texts = [repr(upstream), upstream.label]
    upstream.answer_query(QUERY)
    emulator.answer_quota_per_day = 1
    for error in (QuotaExceeded, MirrorError):
        with pytest.raises(error) as info:
            upstream.answer_query("y" * 501 if error is MirrorError else QUERY)
        texts += [str(info.value), repr(info.value)]
    upstream.close()
    assert all(CANARY not in text for text in texts)
    assert CANARY not in caplog.text
    for request in emulator.requests:
        assert CANARY not in request.path and "key" not in request.query
        assert request.headers.get("x-goog-api-key") == CANARY
