"""The upstream emulator does what it claims: REST and MCP contract, switches, faults."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from tests.emulator import Emulator, Fault
from tests.emulator_mcp import TOOLS_LIST_FILE

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

# The `emulator` fixture comes from tests/emulator_fixtures.py (a plugin of tests/conftest.py).

KEY = {"X-Goog-Api-Key": "test-key"}
TF_README = "documents/www.tensorflow.org/README"
TF_KERAS = "documents/www.tensorflow.org/guide/keras"
SEARCH = "/v1/documents:searchDocumentChunks"
BATCH = "/v1/documents:batchGet"


@pytest.fixture
def http(emulator: Emulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=emulator.base_url, headers=KEY, timeout=10) as client:
        yield client


@pytest.fixture
def small() -> Iterator[Emulator]:
    docs = [
        {
            "name": "documents/a.dev/one",
            "title": "One",
            "content": "# One\n\nAlpha beta. Gamma.",
            "uri": "https://a.dev/one",
        },
        {"name": "documents/b.dev/two", "title": "Two", "content": "# Two\n\nAlpha only, é."},
    ]
    with Emulator(docs, api_key=None) as running:
        yield running


def reason(response: httpx.Response) -> str:
    return response.json()["error"]["details"][0]["reason"]


def rpc(
    client: httpx.Client, method: str, params: dict[str, Any] | None = None, **headers: str
) -> httpx.Response:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": method}
    if params is not None:
        message["params"] = params
    return client.post(
        "/mcp", json=message, headers={"Accept": "application/json, text/event-stream", **headers}
    )


def call(client: httpx.Client, tool: str, **arguments: Any) -> httpx.Response:
    return rpc(client, "tools/call", {"name": tool, "arguments": arguments})


# -- REST ------------------------------------------------------------------------------------------


def test_get_document_views_and_derived_fields(http: httpx.Client) -> None:
    doc = http.get("/v1/documents/www.tensorflow.org/README").json()
    assert doc["view"] == "DOCUMENT_VIEW_CONTENT"
    assert doc["dataSource"] == "www.tensorflow.org"
    assert doc["updateTime"] == "2026-01-01T00:00:00Z"
    assert doc["contentLengthBytes"] == len(doc["content"].encode())
    basic = http.get(
        "/v1alpha/documents/www.tensorflow.org/README", params={"view": "DOCUMENT_VIEW_BASIC"}
    ).json()
    assert "content" not in basic and basic["name"] == TF_README
    assert http.get("/v1/documents/www.tensorflow.org/nope").status_code == 404
    assert (
        http.get("/v1/documents/www.tensorflow.org/README", params={"view": "BOGUS"}).status_code
        == 400
    )
    assert http.get("/v2/whatever").json()["error"]["status"] == "NOT_FOUND"


def test_key_checks(emulator: Emulator) -> None:
    with httpx.Client(base_url=emulator.base_url) as anonymous:
        missing = anonymous.get("/v1/documents/www.tensorflow.org/README")
        assert missing.status_code == 401 and missing.json()["error"]["status"] == "UNAUTHENTICATED"
        wrong = anonymous.get(
            "/v1/documents/www.tensorflow.org/README", headers={"X-Goog-Api-Key": "nope"}
        )
        assert wrong.status_code == 400 and reason(wrong) == "API_KEY_INVALID"
        assert wrong.json()["error"]["message"] == "API key not valid. Please pass a valid API key."
        assert (
            anonymous.get(
                "/v1/documents/www.tensorflow.org/README", params={"key": "test-key"}
            ).status_code
            == 200
        )
        emulator.api_disabled = True
        disabled = anonymous.get(
            "/v1/documents/www.tensorflow.org/README", params={"key": "test-key"}
        )
        assert disabled.status_code == 403 and reason(disabled) == "SERVICE_DISABLED"
        assert "has not been used in project" in disabled.json()["error"]["message"]
        emulator.api_disabled, emulator.key_restricted = False, True
        blocked = anonymous.get(BATCH, params={"names": TF_README, "key": "test-key"})
        assert blocked.status_code == 403 and reason(blocked) == "API_KEY_SERVICE_BLOCKED"
        assert (
            "DeveloperKnowledge.BatchGetDocuments are blocked" in blocked.json()["error"]["message"]
        )


def test_batch_get_order_limits_and_404(emulator: Emulator, http: httpx.Client) -> None:
    names = [TF_KERAS, TF_README, TF_KERAS]
    got = http.get(BATCH, params={"names": names, "view": "DOCUMENT_VIEW_BASIC"}).json()[
        "documents"
    ]
    assert [d["name"] for d in got] == names and "content" not in got[0]
    missing = http.get(BATCH, params={"names": [TF_README, "documents/x/y", "documents/x/z"]})
    assert (
        missing.status_code == 404
        and missing.json()["error"]["message"] == "Document documents/x/y not found."
    )
    emulator.batch_404_names_document = False
    generic = http.get(BATCH, params={"names": [TF_README, "documents/x/y"]})
    assert generic.status_code == 404 and "documents/x/y" not in generic.text
    assert http.get(BATCH, params={"names": [TF_README] * 21}).status_code == 400
    assert http.get(BATCH).status_code == 400
    assert http.get(BATCH, params={"names": "documents/" + "x" * 500}).status_code == 400


def test_search_paging_walks_every_page_once(http: httpx.Client) -> None:
    params = {"query": "tensorflow model", "pageSize": 7}
    seen: list[tuple[str, str]] = []
    pages = 0
    while True:
        page = http.get(SEARCH, params=params).json()
        pages += 1
        assert 0 < len(page["results"]) <= 7
        seen += [(r["parent"], r["id"]) for r in page["results"]]
        if "nextPageToken" not in page:
            break
        params["pageToken"] = page["nextPageToken"]
    assert pages > 3 and len(seen) == len(set(seen))
    one = http.get(SEARCH, params={"query": "tensorflow model", "pageSize": 1000}).json()
    assert len(one["results"]) == min(100, len(seen))
    assert [(r["parent"], r["id"]) for r in one["results"]] == seen[:100]
    result = one["results"][0]
    assert set(result) == {"parent", "id", "content", "document", "relevanceScore"}
    assert "content" not in result["document"] and 0 <= result["relevanceScore"] <= 1
    scores = [r["relevanceScore"] for r in one["results"]]
    assert scores == sorted(scores, reverse=True)
    default = http.get(SEARCH, params={"query": "tensorflow model"}).json()
    assert len(default["results"]) == 5


def test_search_validation_and_tokens(http: httpx.Client) -> None:
    assert http.get(SEARCH).status_code == 400
    assert http.get(SEARCH, params={"query": "x" * 501}).status_code == 400
    assert http.get(SEARCH, params={"query": "chrome", "pageSize": -1}).status_code == 400
    token = http.get(SEARCH, params={"query": "chrome"}).json()["nextPageToken"]
    assert http.get(SEARCH, params={"query": "other", "pageToken": token}).status_code == 400
    assert http.get(SEARCH, params={"query": "chrome", "pageToken": "garbage!"}).status_code == 400
    assert http.get(SEARCH, params={"query": "zzqqxxnotaword"}).json() == {"results": []}


@pytest.mark.parametrize(
    ("expression", "sources"),
    [
        ('data_source = "www.tensorflow.org"', {"www.tensorflow.org"}),
        ('data_source != "www.tensorflow.org"', {"developer.chrome.com"}),
        (
            'data_source = "www.tensorflow.org" OR data_source = "developer.chrome.com"',
            {"www.tensorflow.org", "developer.chrome.com"},
        ),
        ('NOT data_source = "www.tensorflow.org"', {"developer.chrome.com"}),
        # OR binds tighter than AND: a AND (b OR c)
        (
            'data_source = "developer.chrome.com" AND data_source = "x" '
            "OR content_length_bytes > 0",
            {"developer.chrome.com"},
        ),
        (
            'update_time >= "2025-01-22T00:00:00Z" '
            'AND (data_source = "web.dev" OR data_source = "www.tensorflow.org")',
            {"www.tensorflow.org"},
        ),
        ('update_time > "2026-01-01T00:00:00Z"', set()),
    ],
)
def test_search_filters(http: httpx.Client, expression: str, sources: set[str]) -> None:
    page = http.get(
        SEARCH, params={"query": "tensorflow chrome", "pageSize": 100, "filter": expression}
    )
    assert page.status_code == 200, page.text
    assert {r["document"]["dataSource"] for r in page.json()["results"]} == sources


def test_search_filter_by_uri_and_invalid_filters(http: httpx.Client) -> None:
    uri = "https://www.tensorflow.org/guide/keras"
    page = http.get(
        SEARCH, params={"query": "keras", "pageSize": 100, "filter": f'uri = "{uri}"'}
    ).json()
    assert {r["document"]["uri"] for r in page["results"]} == {uri}
    for bad in [
        "data_source = chrome",
        'color = "red"',
        'data_source > "a"',
        '(uri = "x"',
        'update_time > "yesterday"',
    ]:
        assert http.get(SEARCH, params={"query": "keras", "filter": bad}).status_code == 400, bad


def test_answer_query_citations_are_utf8_byte_offsets(small: Emulator) -> None:
    with httpx.Client(base_url=small.base_url) as client:
        answer = client.post("/v1:answerQuery", json={"query": "alpha"}).json()["answer"]
        raw = answer["answerText"].encode()
        assert [c["sources"][0]["referenceIndex"] for c in answer["citations"]] == [0, 1]
        for citation, ref in zip(answer["citations"], answer["references"], strict=True):
            cited = raw[citation["startIndex"] : citation["endIndex"]].decode()
            chunk = ref["documentReference"]["documentChunk"]
            assert (
                cited.startswith(f"According to {chunk['document']['title']}:")
                and "id" not in chunk
            )
        assert "é" in answer["answerText"]
        filtered = client.post(
            "/v1:answerQuery", json={"query": "alpha", "filter": 'data_source = "b.dev"'}
        ).json()
        assert len(filtered["answer"]["references"]) == 1
        assert client.post("/v1:answerQuery", json={"nope": 1}).status_code == 400


def test_quotas(small: Emulator) -> None:
    small.quota_per_minute = {"search": 2}
    small.answer_quota_per_day = 1
    with httpx.Client(base_url=small.base_url) as client:
        assert [client.get(SEARCH, params={"query": "alpha"}).status_code for _ in range(2)] == [
            200,
            200,
        ]
        limited = client.get(SEARCH, params={"query": "alpha"})
        assert (
            limited.status_code == 429 and limited.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
        )
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        small.clock = lambda: 10**9  # a minute later
        assert client.get(SEARCH, params={"query": "alpha"}).status_code == 200
        assert client.post("/v1:answerQuery", json={"query": "alpha"}).status_code == 200
        assert client.post("/v1:answerQuery", json={"query": "alpha"}).status_code == 429
        assert call(client, "answer_query", query="alpha").json()["result"]["isError"] is True


def test_put_and_remove(small: Emulator) -> None:
    with httpx.Client(base_url=small.base_url) as client:
        small.put({"name": "documents/a.dev/one", "title": "One", "content": "new"})
        first = client.get("/v1/documents/a.dev/one").json()
        assert first["content"] == "new" and first["updateTime"] > "2026-01-01T00:00:00Z"
        small.put({"name": "documents/a.dev/one", "content": "newer"})
        assert client.get("/v1/documents/a.dev/one").json()["updateTime"] > first["updateTime"]
        small.put(
            {"uri": "https://c.dev/three", "content": "x", "updateTime": "2026-05-05T00:00:00Z"}
        )
        three = client.get("/v1/documents/c.dev/three").json()
        assert three["dataSource"] == "c.dev" and three["updateTime"] == "2026-05-05T00:00:00Z"
        small.remove("documents/a.dev/one")
        assert client.get("/v1/documents/a.dev/one").status_code == 404


# -- faults ----------------------------------------------------------------------------------------


def test_fault_status_with_retry_after_counts_and_path_matching(
    emulator: Emulator, http: httpx.Client
) -> None:
    emulator.inject(Fault("status", status=429, retry_after="7"), times=2, path=SEARCH)
    assert http.get(BATCH, params={"names": TF_README}).status_code == 200  # other paths untouched
    first = http.get(SEARCH, params={"query": "keras"})
    assert first.status_code == 429 and first.headers["Retry-After"] == "7"
    assert first.json()["error"] == {
        "code": 429,
        "message": first.json()["error"]["message"],
        "status": "RESOURCE_EXHAUSTED",
    }
    assert http.get(SEARCH, params={"query": "keras"}).status_code == 429
    assert http.get(SEARCH, params={"query": "keras"}).status_code == 200
    assert (
        emulator.count(SEARCH) == 3
        and emulator.count() == 4
        and emulator.count("/v1/documents") == 4
    )
    emulator.inject(Fault("status", status=503), times=-1)
    assert {http.get(SEARCH, params={"query": "keras"}).status_code for _ in range(3)} == {503}
    emulator.reset()
    assert http.get(SEARCH, params={"query": "keras"}).status_code == 200 and emulator.count() == 1


def test_a_marked_module_shares_one_emulator(emulator: Emulator, module_emulator: Emulator) -> None:
    # This module is marked shared_emulator: no server is started per test.
    assert emulator is module_emulator and emulator.base_url


def test_restore_returns_to_how_it_was_built(emulator: Emulator, http: httpx.Client) -> None:
    # What a module-shared emulator does between tests (tests/emulator_fixtures.py).
    built = http.get("/v1/documents/www.tensorflow.org/README").json()
    emulator.put({"name": TF_README, "content": "# Changed"})
    emulator.put({"name": "documents/new.dev/page", "content": "# New"})
    emulator.remove(TF_KERAS)
    emulator.api_key, emulator.api_disabled, emulator.mcp_sse = "rotated", True, True
    emulator.quota_per_minute["search"] = 1
    emulator.answer_quota_per_day = 0
    emulator.clock = lambda: 0.0
    emulator.inject(Fault("status", status=500), times=-1)
    assert rpc(http, "initialize").status_code == 500
    emulator.restore()
    assert emulator.requests == [] and emulator.count() == 0
    assert http.get("/v1/documents/www.tensorflow.org/README").json() == built
    assert http.get("/v1/documents/" + TF_KERAS.removeprefix("documents/")).status_code == 200
    assert http.get("/v1/documents/new.dev/page").status_code == 404
    assert [http.get(SEARCH, params={"query": "keras"}).status_code for _ in range(2)] == [200] * 2
    assert http.post("/v1:answerQuery", json={"query": "keras"}).status_code == 200
    assert emulator.clock() > 0.0 and not emulator.mcp_sse
    assert emulator.quota_per_minute == {}  # the built value, not the one a test changed


def test_fault_latency(emulator: Emulator, http: httpx.Client) -> None:
    emulator.inject(Fault("latency", seconds=0.5))
    with pytest.raises(httpx.ReadTimeout):
        http.get("/v1/documents/www.tensorflow.org/README", timeout=0.05)
    assert http.get("/v1/documents/www.tensorflow.org/README").status_code == 200


@pytest.mark.parametrize("kind", ["drop", "truncate"])
def test_fault_broken_connections(emulator: Emulator, http: httpx.Client, kind: str) -> None:
    emulator.inject(Fault(kind))
    with pytest.raises(httpx.RemoteProtocolError):
        http.get("/v1/documents/www.tensorflow.org/README")
    assert http.get("/v1/documents/www.tensorflow.org/README").status_code == 200


def test_fault_truncate_with_exact_framing_is_well_formed_http_with_half_a_body(
    emulator: Emulator, http: httpx.Client
) -> None:
    whole = http.get(BATCH, params={"names": TF_README}).content
    emulator.inject(Fault("truncate", framing="exact"))
    cut = http.get(BATCH, params={"names": TF_README})
    assert cut.status_code == 200 and cut.content == whole[: len(whole) // 2]
    with pytest.raises(json.JSONDecodeError):
        cut.json()
    assert http.get(BATCH, params={"names": TF_README}).content == whole


def test_a_fault_can_target_the_requests_for_one_document(
    emulator: Emulator, http: httpx.Client
) -> None:
    emulator.inject(Fault("status", status=503), times=-1, name=TF_KERAS)
    assert http.get(BATCH, params={"names": [TF_README, TF_KERAS]}).status_code == 503
    assert http.get(f"/v1/{TF_KERAS}").status_code == 503
    assert call(http, "get_documents", names=[TF_KERAS]).status_code == 503
    assert http.get(BATCH, params={"names": [TF_README]}).status_code == 200
    assert call(http, "get_documents", names=[TF_README]).json()["result"]["isError"] is False


def _faults_seen(seed: int, rates: dict[str, float], requests: int) -> list[str]:
    with Emulator([{"name": TF_README, "content": "# Read me"}], seed=seed) as emu:
        for kind, rate in rates.items():
            emu.inject(Fault("status", status=int(kind)), times=-1, rate=rate)
        with httpx.Client(base_url=emu.base_url, headers=KEY) as client:
            return [
                str(client.get(BATCH, params={"names": TF_README}).status_code)
                for _ in range(requests)
            ]


def test_fault_rates_are_shares_of_requests_and_repeat_with_the_seed() -> None:
    rates = {"503": 0.2, "500": 0.2}
    seen = _faults_seen(7, rates, 400)
    # Disjoint slices: 20% each, the rest answered normally (binomial, n=400: sd 8).
    assert 50 <= seen.count("503") <= 110 and 50 <= seen.count("500") <= 110
    assert seen.count("200") == 400 - seen.count("503") - seen.count("500")
    assert _faults_seen(7, rates, 400) == seen
    assert _faults_seen(8, rates, 400) != seen
    with pytest.raises(ValueError, match="rate"):
        Emulator().inject(Fault("drop"), rate=1.5)


def test_fault_bad_json_and_wrong_shape(emulator: Emulator, http: httpx.Client) -> None:
    emulator.inject(Fault("bad_json"))
    emulator.inject(Fault("wrong_shape"))
    bad = http.get(BATCH, params={"names": TF_README})
    assert bad.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        bad.json()
    assert http.get(BATCH, params={"names": TF_README}).json() == {"docs": 1}
    emulator.inject(Fault("wrong_shape"), tool="get_documents")
    assert call(http, "search_documents", query="keras").json()["result"]["isError"] is False
    assert call(http, "get_documents", names=[TF_README]).json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"docs": 1},
    }


def test_concurrent_requests_are_all_counted_and_faults_fire_exactly(emulator: Emulator) -> None:
    emulator.inject(Fault("status", status=503), times=5, path="/v1/documents/")

    def worker(_: int) -> list[int]:
        with httpx.Client(base_url=emulator.base_url, headers=KEY) as client:
            return [client.get(f"/v1/documents/{TF_README[10:]}").status_code for _ in range(10)]

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = [code for codes in pool.map(worker, range(8)) for code in codes]
    assert emulator.count() == 80 and sorted(set(codes)) == [200, 503]
    assert codes.count(503) == 5


def test_inject_rejects_nonsense(emulator: Emulator) -> None:
    with pytest.raises(ValueError):
        emulator.inject(Fault("explode"))
    with pytest.raises(ValueError):
        emulator.inject(Fault("drop"), times=0)


def test_stop_closes_kept_alive_connections(small: Emulator) -> None:
    with httpx.Client(base_url=small.base_url) as client:
        assert client.get("/v1/documents/a.dev/one").status_code == 200
        small.stop()
        with pytest.raises(httpx.TransportError):
            client.get("/v1/documents/a.dev/one")


# -- MCP -------------------------------------------------------------------------------------------

ANNOTATIONS = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
NAME_FORMAT = (
    "Format: `documents/{uri_without_scheme}` "
    "Example: `documents/docs.cloud.google.com/storage/docs/creating-buckets`"
)
INPUT_SCHEMAS = {
    "search_documents": {
        "type": "object",
        "properties": {
            "query": {
                "description": "Required. The raw query string provided by the user, such as "
                '"How to create a Cloud Storage bucket?".',
                "type": "string",
            }
        },
        "required": ["query"],
        "description": "Request schema for search_documents. Use the query field to search "
        "for related Google developer documentation.",
    },
    "answer_query": {
        "type": "object",
        "properties": {
            "query": {"description": "Required. The query to answer.", "type": "string"}
        },
        "required": ["query"],
        "description": "Request message for AnswerQuery.",
    },
    "get_documents": {
        "type": "object",
        "properties": {
            "names": {
                "description": "Required. The names of the documents to retrieve, as returned "
                "by search_documents. A maximum of 20 documents can be retrieved in one call. The "
                "documents are returned in the same order as the `names` in the request. "
                + NAME_FORMAT,
                "items": {"type": "string"},
                "type": "array",
            }
        },
        "required": ["names"],
        "description": "Request schema for get_documents.",
    },
}


def strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: strip_descriptions(v)
            for k, v in schema.items()
            if not (k == "description" and isinstance(v, str))
        }
    return schema


def test_tools_list_matches_the_reference(http: httpx.Client) -> None:
    with httpx.Client(base_url=http.base_url) as anonymous:  # no key needed to list tools
        result = rpc(anonymous, "tools/list").json()["result"]
    # The emulator serves the captured payload file verbatim; the checks below read it too.
    assert result == json.loads(TOOLS_LIST_FILE.read_text(encoding="utf-8"))
    tools = {t["name"]: t for t in result["tools"]}
    assert list(tools) == ["search_documents", "answer_query", "get_documents"]
    for name, tool in tools.items():
        assert tool["inputSchema"] == INPUT_SCHEMAS[name]
        assert tool["annotations"] == ANNOTATIONS
    string = {"readOnly": True, "type": "string"}
    assert strip_descriptions(tools["search_documents"]["outputSchema"]) == {
        "type": "object",
        "properties": {"results": {"items": {"$ref": "#/$defs/DocumentChunk"}, "type": "array"}},
        "$defs": {
            "DocumentChunk": {
                "properties": dict.fromkeys(["content", "id", "parent"], string),
                "type": "object",
            }
        },
    }
    document = dict.fromkeys(["content", "description", "title", "uri"], string)
    document["name"] = {"type": "string", "x-google-identifier": True}
    assert strip_descriptions(tools["get_documents"]["outputSchema"]) == {
        "type": "object",
        "properties": {"documents": {"items": {"$ref": "#/$defs/Document"}, "type": "array"}},
        "$defs": {"Document": {"properties": document, "type": "object"}},
    }
    assert strip_descriptions(tools["answer_query"]["outputSchema"]) == {
        "type": "object",
        "properties": {
            "answerText": {"type": "string"},
            "references": {"items": {"type": "string"}, "readOnly": True, "type": "array"},
        },
    }
    assert tools["search_documents"]["description"].startswith(
        "Use this tool to find documentation about Google"
    )
    assert (
        "If you get a 429 out of quota error, use search_documents instead."
        in tools["answer_query"]["description"]
    )


def test_mcp_tools_without_initialize(http: httpx.Client) -> None:
    found = call(http, "search_documents", query="keras").json()["result"]
    results = found["structuredContent"]["results"]
    assert len(results) == 5 and set(results[0]) == {"parent", "id", "content"}
    assert json.loads(found["content"][0]["text"]) == found["structuredContent"]
    docs = call(http, "get_documents", names=[TF_KERAS, TF_README]).json()["result"][
        "structuredContent"
    ]
    assert [d["name"] for d in docs["documents"]] == [TF_KERAS, TF_README]
    assert set(docs["documents"][0]) == {"name", "uri", "content", "description", "title"}
    answer = call(http, "answer_query", query="keras").json()["result"]["structuredContent"]
    assert answer["answerText"] and all(r.startswith("documents/") for r in answer["references"])


def test_mcp_protocol_edges(emulator: Emulator, http: httpx.Client) -> None:
    init = rpc(
        http,
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    )
    assert (
        init.json()["result"]["protocolVersion"] == "2025-06-18"
        and "mcp-session-id" not in init.headers
    )
    assert init.json()["result"]["capabilities"] == {"tools": {}}
    note = http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert note.status_code == 202 and note.content == b""
    unsupported = rpc(http, "resources/list")
    assert unsupported.status_code == 400 and unsupported.json()["error"] == {
        "code": -32601,
        "message": "Method not supported",
    }
    assert http.get("/mcp").status_code == 405
    assert http.post("/mcp", content=b"{").json()["error"]["code"] == -32700
    emulator.mcp_structured = False
    plain = call(http, "search_documents", query="keras").json()["result"]
    assert "structuredContent" not in plain and json.loads(plain["content"][0]["text"])["results"]
    assert emulator.count("/mcp", tool="search_documents") == 1
    assert [r.jsonrpc_method for r in emulator.requests][:2] == [
        "initialize",
        "notifications/initialized",
    ]


def test_mcp_session_required_mode(emulator: Emulator, http: httpx.Client) -> None:
    emulator.mcp_require_session = True
    refused = rpc(http, "tools/list")
    assert refused.status_code == 400
    assert refused.json()["error"] == {
        "code": -32600,
        "message": "Bad Request: No valid session ID provided",
    }
    session = rpc(http, "initialize", {"protocolVersion": "2025-06-18"}).headers["mcp-session-id"]
    assert rpc(http, "tools/list", **{"Mcp-Session-Id": session}).status_code == 200
    assert rpc(http, "tools/list", **{"Mcp-Session-Id": "forged"}).status_code == 400


def test_mcp_sse_mode(emulator: Emulator, http: httpx.Client) -> None:
    emulator.mcp_sse = True
    response = rpc(http, "tools/list")
    assert response.headers["content-type"].startswith("text/event-stream")
    lines = response.text.splitlines()
    assert lines[0] == "event: message" and lines[1].startswith("data: ")
    assert len(json.loads(lines[1][len("data: ") :])["result"]["tools"]) == 3


@pytest.mark.parametrize("style", ["iserror", "jsonrpc", "http"])
def test_mcp_error_styles(emulator: Emulator, style: str) -> None:
    emulator.mcp_error_style = style
    with httpx.Client(base_url=emulator.base_url, headers={"X-Goog-Api-Key": "wrong"}) as client:
        bad_key = call(client, "search_documents", query="keras")
        client.headers["X-Goog-Api-Key"] = "test-key"
        missing = call(client, "get_documents", names=[TF_README, "documents/x/y"])
    if style == "iserror":
        for response, text in [
            (bad_key, "API key not valid"),
            (missing, "Document documents/x/y not found."),
        ]:
            result = response.json()["result"]
            assert (
                response.status_code == 200
                and result["isError"] is True
                and text in result["content"][0]["text"]
            )
    elif style == "jsonrpc":
        assert (
            bad_key.status_code == 200
            and bad_key.json()["error"]["data"]["status"] == "INVALID_ARGUMENT"
        )
        assert (
            missing.json()["error"]["code"] == 404
            and missing.json()["error"]["data"]["status"] == "NOT_FOUND"
        )
    else:
        assert bad_key.status_code == 400 and reason(bad_key) == "API_KEY_INVALID"
        assert missing.status_code == 404 and missing.json()["error"]["status"] == "NOT_FOUND"


def test_page_token_is_opaque_base64(http: httpx.Client) -> None:
    token = http.get(SEARCH, params={"query": "keras"}).json()["nextPageToken"]
    base64.urlsafe_b64decode(
        token + "=" * (-len(token) % 4)
    )  # decodable, but clients must not care


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_real_mcp_client(emulator: Emulator, mode: str) -> None:
    mcp = pytest.importorskip("mcp")
    httpx2 = pytest.importorskip("httpx2")
    anyio = pytest.importorskip("anyio")
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> tuple[list[str], Any]:
        async with httpx2.AsyncClient(headers=KEY) as http_client:
            transport = streamable_http_client(emulator.mcp_url, http_client=http_client)
            async with mcp.Client(transport, mode=mode) as client:
                listed = await client.list_tools()
                result = await client.call_tool("get_documents", {"names": [TF_README]})
                return [t.name for t in listed.tools], result

    names, result = anyio.run(main)
    assert names == ["search_documents", "answer_query", "get_documents"]
    assert result.structured_content["documents"][0]["name"] == TF_README
