"""Provenance on every answer: REST headers (httpx against a real server), MCP `_meta` (the
`mcp` SDK's client, which validates Google's output schemas), and `serve --as-of` with
Memento-Datetime. The CLI's `--json` `_mirror` is covered in test_as_of.py."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import httpx
import jsonschema
import pytest

from mirror.config import Settings
from mirror.models import Document, rfc3339
from mirror.serve.provenance import META_KEY
from mirror.service import Mirror
from mirror.store.store import Store

from .conftest import no_wait_retry
from .emulator import Emulator
from .emulator_fixtures import corpus_documents
from .emulator_mcp import TOOLS

T1 = 1_780_000_000.0
T2 = T1 + 86_400.0
BETWEEN = T1 + 3_600.0
OLD_TIME, NEW_TIME = "2026-05-01T00:00:00Z", "2026-05-29T00:00:00Z"
OUTPUT_SCHEMAS = {tool["name"]: tool["outputSchema"] for tool in TOOLS}


@pytest.fixture
def docs() -> list[dict[str, Any]]:
    return corpus_documents("tensorflow.org")[:3]


@pytest.fixture
def history(db_url: str, docs: list[dict[str, Any]]) -> str:
    """A store whose first page changed between T1 and T2 (two versions kept)."""
    store = Store.open(db_url)
    try:
        first = [Document.from_api({**d, "updateTime": OLD_TIME}) for d in docs[:2]]
        store.put(first, fetched_at=T1, upstream="test")
        changed = Document.from_api(
            {**docs[0], "content": docs[0]["content"] + "\nNew.\n", "updateTime": NEW_TIME}
        )
        store.put([changed], fetched_at=T2, upstream="test")
    finally:
        store.close()
    return db_url


@pytest.fixture
def open_mirror(history: str) -> Iterator[Callable[..., Mirror]]:
    made: list[Mirror] = []

    def build(**kwargs: Any) -> Mirror:
        as_of = kwargs.pop("as_of", None)
        settings = Settings(db_url=history, **{"offline": True, **kwargs})
        made.append(Mirror(settings, retry=no_wait_retry(), as_of=as_of))
        return made[-1]

    yield build
    for mirror in made:
        mirror.close()


def test_rest_headers_say_where_and_when_each_document_came_from(
    open_mirror: Callable[..., Mirror], serve_app: Callable[..., str], docs: list[dict[str, Any]]
) -> None:
    url = serve_app(open_mirror())
    a, b = docs[0]["name"], docs[1]["name"]
    with httpx.Client(base_url=url) as http:
        for _ in range(2):  # the second answer comes from the server's answer cache
            one = http.get(f"/v1/{a}")
            assert one.status_code == 200
            assert one.headers["X-Mirror-Source"] == "cache"
            assert one.headers["X-Mirror-Fetched-At"] == rfc3339(T2)
            assert one.headers["X-Mirror-Update-Time"] == NEW_TIME
            assert "Memento-Datetime" not in one.headers
        batch = http.get("/v1/documents:batchGet", params={"names": [b, a]})
        assert batch.headers["X-Mirror-Fetched-At"] == f"{rfc3339(T1)},{rfc3339(T2)}"
        assert batch.headers["X-Mirror-Update-Time"] == f"{OLD_TIME},{NEW_TIME}"
        assert batch.headers["X-Mirror-Source"] == "cache,cache"
        search = http.get("/v1/documents:searchDocumentChunks", params={"query": "tensorflow"})
        assert search.status_code == 200 and search.headers["X-Mirror-Source"] == "local"


def test_rest_says_upstream_for_a_page_fetched_for_the_request(
    open_mirror: Callable[..., Mirror], serve_app: Callable[..., str], docs: list[dict[str, Any]]
) -> None:
    with Emulator(docs, api_key="test-key") as upstream:
        mirror = open_mirror(offline=False, upstream=upstream.base_url, api_key="test-key")
        url = serve_app(mirror, allow_fetch=True)
        with httpx.Client(base_url=url) as http:
            fetched = http.get(f"/v1/{docs[2]['name']}")
            again = http.get(f"/v1/{docs[2]['name']}")
    assert fetched.status_code == 200, fetched.text
    assert fetched.headers["X-Mirror-Source"] == "upstream"
    assert again.headers["X-Mirror-Source"] == "cache"
    assert again.headers["X-Mirror-Fetched-At"] == fetched.headers["X-Mirror-Fetched-At"]


def test_serve_as_of_answers_the_past_with_memento_datetime(
    open_mirror: Callable[..., Mirror], serve_app: Callable[..., str], docs: list[dict[str, Any]]
) -> None:
    url = serve_app(open_mirror(as_of=BETWEEN))
    a, b, late = docs[0]["name"], docs[1]["name"], docs[2]["name"]
    with httpx.Client(base_url=url) as http:
        one = http.get(f"/v1/{a}")
        batch = http.get("/v1/documents:batchGet", params={"names": [a, b]})
        search = http.get("/v1/documents:searchDocumentChunks", params={"query": "tensorflow"})
        missing = http.get(f"/v1/{late}")
    assert one.json()["content"] == docs[0]["content"]  # the older version, byte for byte
    # One document: when the copy served was captured; otherwise the instant asked for.
    assert parsedate_to_datetime(one.headers["Memento-Datetime"]).timestamp() == int(T1)
    assert one.headers["Memento-Datetime"].endswith(" GMT")
    assert one.headers["X-Mirror-As-Of"] == rfc3339(BETWEEN)
    assert one.headers["X-Mirror-Update-Time"] == OLD_TIME
    for answer in (batch, search):
        assert answer.status_code == 200
        assert parsedate_to_datetime(answer.headers["Memento-Datetime"]).timestamp() == BETWEEN
    assert (
        missing.status_code == 404
        and "not in the store as of" in missing.json()["error"]["message"]
    )


def test_mcp_results_carry_meta_without_changing_google_schemas(
    open_mirror: Callable[..., Mirror], docs: list[dict[str, Any]]
) -> None:
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    a = docs[0]["name"]

    async def calls(mirror: Mirror) -> dict[str, Any]:
        # The SDK's client checks each structuredContent against the tool's output schema.
        async with Client(build_server(mirror, ServeOptions())) as client:
            return {
                "get": await client.call_tool("get_documents", {"names": [a]}),
                "search": await client.call_tool("search_documents", {"query": "tensorflow"}),
                "answer": await client.call_tool("answer_query", {"query": "what is tensorflow"}),
            }

    now = anyio.run(calls, open_mirror())
    then = anyio.run(calls, open_mirror(as_of=BETWEEN))
    for results in (now, then):
        for tool, result in results.items():
            assert not result.is_error, result.content[0].text
            name = {"get": "get_documents", "search": "search_documents"}.get(tool, "answer_query")
            jsonschema.validate(result.structured_content, OUTPUT_SCHEMAS[name])
            assert json.loads(result.content[0].text) == result.structured_content
            assert "_meta" not in result.structured_content
    got = now["get"].meta[META_KEY]
    assert got == {
        "documents": [{"name": a, "source": "cache", "fetchedAt": rfc3339(T2), "updateTime": NEW_TIME}],
        "asOf": None,
    }  # fmt: skip
    past = then["get"].meta[META_KEY]
    assert past["asOf"] == rfc3339(BETWEEN)
    assert past["documents"][0]["fetchedAt"] == rfc3339(T1)
    assert then["get"].structured_content["documents"][0]["content"] == docs[0]["content"]
    for results in (now, then):
        search = results["search"].meta[META_KEY]
        assert search["source"] == "local" and search["documents"]
        parents = {r["parent"] for r in results["search"].structured_content["results"]}
        assert {d["name"] for d in search["documents"]} == parents
        answer = results["answer"].meta[META_KEY]
        assert answer["source"] == "extractive" and answer["documents"]
        assert {d["name"] for d in answer["documents"]} == set(
            results["answer"].structured_content["references"]
        )
