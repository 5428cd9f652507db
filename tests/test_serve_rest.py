"""REST conformance of `dk-mirror serve`: the core upstream contract, run through a served mirror.

Two mirrors chained: mirror A (its own store) serves with --allow-fetch in front of the
emulator; mirror B (another store) uses A as its upstream, over REST and over MCP. The core
contract tests of test_get_documents.py are imported here and run with B as `mirror`, so
they check that A behaves as upstream does (order, >20 split, atomic 404 narrowed down,
NotFound) and that A's cache answers what it already holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mirror.config import Settings
from mirror.errors import AuthError, BadRequest, InvalidInput, NotFound
from mirror.service import Mirror
from mirror.upstream import Upstream, open_upstream
from tests import test_get_documents as contract
from tests.conftest import no_wait_retry
from tests.serve_fixtures import TOKEN
from tests.test_get_documents import (  # run here again, with B in front of A
    BATCH,
    TF,
    test_first_get_fetches_then_repeat_is_served_from_cache_with_zero_requests,
    test_get_documents_refuses_more_than_twenty,
    test_mixed_batch_fetches_only_the_misses_and_keeps_request_order,
    test_more_than_twenty_names_are_split_into_batches_by_fetch,
    test_offline_never_makes_a_request_and_names_what_is_missing,
    test_one_missing_name_is_reported_and_the_others_cached,
    test_pasted_forms_are_normalised_before_lookup,
)
from tests.test_upstream_search import CHROME, QUERY, keys, walk

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = [pytest.mark.both_backends, pytest.mark.shared_emulator]

# Imported so pytest collects them here, with this module's fixtures; named so linters see use.
CONTRACT = (
    test_first_get_fetches_then_repeat_is_served_from_cache_with_zero_requests,
    test_get_documents_refuses_more_than_twenty,
    test_mixed_batch_fetches_only_the_misses_and_keeps_request_order,
    test_more_than_twenty_names_are_split_into_batches_by_fetch,
    test_offline_never_makes_a_request_and_names_what_is_missing,
    test_one_missing_name_is_reported_and_the_others_cached,
    test_pasted_forms_are_normalised_before_lookup,
)
SEARCH = "/v1/documents:searchDocumentChunks"


@pytest.fixture(params=["rest", "mcp"])
def via(request: pytest.FixtureRequest) -> str:
    """How B talks to A."""
    return str(request.param)


@pytest.fixture
def a_mode() -> str:
    """A's serve mode (tests that need live mode parametrize this)."""
    return "cache-first"


@pytest.fixture
def served_a(store_mirror, serve_app, emulator, a_mode) -> str:
    """Mirror A serving (fetching allowed) in front of the emulator; its base URL."""
    a = store_mirror("a", upstream=emulator.base_url, api_key=emulator.api_key)
    return str(serve_app(a, mode=a_mode, allow_fetch=True))


@pytest.fixture
def make_mirror(db_url: str, served_a: str, via: str) -> Iterator[Callable[..., Mirror]]:
    """Overrides conftest's: B mirrors on the test's store, with A as their upstream."""
    made: list[Mirror] = []

    def build(**overrides: Any) -> Mirror:
        retry = overrides.pop("retry", None) or no_wait_retry()
        fields = {"db_url": db_url, "upstream": served_a, "transport": via, **overrides}
        mirror = Mirror(Settings(**fields), retry=retry)
        made.append(mirror)
        return mirror

    yield build
    for mirror in made:
        mirror.close()


def test_a_second_store_is_served_from_a_cache(make_mirror, emulator, tmp_path):
    first = make_mirror().get_documents(TF)
    assert emulator.count(BATCH) == 1
    other = make_mirror(db_url=f"sqlite:///{tmp_path / 'b2.sqlite3'}")
    again = other.get_documents(TF)
    assert emulator.count(BATCH) == 1  # A answered from its store
    assert [d.content for d in again.documents] == [d.content for d in first.documents]
    assert [s.source for s in again.served] == ["upstream"] * 3  # fetched, from B2's view


@pytest.mark.parametrize("a_mode", ["live"])
def test_live_a_refetches_for_max_age_and_refresh(make_mirror, emulator):
    # B cannot tell a cache-first A to refresh (the API has no such parameter); a live A
    # asks upstream every time, so B's --max-age and --refresh reach the source.
    contract.test_max_age_and_refresh_refetch(make_mirror, emulator)


@pytest.mark.parametrize("a_mode", ["live"])
def test_live_a_writes_changed_documents_through(mirror, emulator):
    contract.test_changed_upstream_document_is_written_through_on_refresh(mirror, emulator)


# -- REST specifics: B's REST client and raw HTTP against A --------------------------------------


@pytest.fixture
def a_client(served_a: str) -> Iterator[Upstream]:
    """A REST client (the project's own) pointed at A."""
    upstream = open_upstream(Settings(db_url="sqlite://", upstream=served_a), retry=no_wait_retry())
    yield upstream
    upstream.close()


def test_paging_and_filters_pass_through(a_client, emulator):
    pages = walk(a_client, page_size=7)
    hits = [c for p in pages for c in p.results]
    assert len(pages) > 2 and pages[-1].next_page_token is None
    assert len(set(keys(hits))) == len(hits)
    assert keys(hits) == keys(a_client.search_chunks(QUERY, page_size=100).results)
    sent = [r.query for r in emulator.requests if r.path == SEARCH][: len(pages)]
    assert [q.get("pageToken", [None])[0] for q in sent[1:]] == [
        p.next_page_token for p in pages[:-1]
    ]
    chrome = [c for p in walk(a_client, page_size=20, filter=CHROME) for c in p.results]
    assert chrome and all(
        c.document and c.document.data_source == "developer.chrome.com" for c in chrome
    )
    assert len(chrome) < len(hits)
    with pytest.raises(BadRequest) as info:
        a_client.search_chunks(QUERY, filter="dataSource = chrome")
    assert info.value.status == 400 and info.value.code == "INVALID_ARGUMENT"


def test_answer_query_passes_through(a_client, emulator):
    answer = a_client.answer_query("keras callbacks", filter=CHROME)
    assert answer.answer_text and answer.citations and answer.references
    assert {"query": "keras callbacks", "filter": CHROME} in [r.json for r in emulator.requests]


@pytest.mark.sqlite_only("local search on PostgreSQL is the pgsearch branch's")
def test_read_only_local_search_pages_and_filters(served_sample):
    upstream = open_upstream(
        Settings(db_url="sqlite://", upstream=served_sample), retry=no_wait_retry()
    )
    query = "service worker"
    pages = [upstream.search_chunks(query, page_size=3)]
    while pages[-1].next_page_token and len(pages) < 50:
        token = pages[-1].next_page_token
        pages.append(upstream.search_chunks(query, page_size=3, page_token=token))
    hits = [c for p in pages for c in p.results]
    assert len(pages) > 2 and len(set(keys(hits))) == len(hits)
    assert all(c.document and c.relevance_score is not None for c in hits)
    tf = 'data_source = "www.tensorflow.org"'
    assert all(
        c.parent.startswith("documents/www.tensorflow.org/")
        for c in upstream.search_chunks("models", page_size=20, filter=tf).results
    )
    upstream.close()


@pytest.mark.sqlite_only("local search on PostgreSQL is the pgsearch branch's")
def test_google_shapes_views_and_errors(sample_mirror, serve_client):
    name = "documents/developer.chrome.com/docs/extensions/migrating"
    path = "/v1/" + name
    http = serve_client(sample_mirror)
    doc = http.get(path, params={"key": "ignored"}, headers={"X-Goog-Api-Key": "x"}).json()
    assert doc["name"] == name and doc["view"] == "DOCUMENT_VIEW_CONTENT" and doc["content"]
    assert {"uri", "title", "description", "dataSource", "contentLengthBytes"} <= set(doc)
    basic = http.get(path, params={"view": "DOCUMENT_VIEW_BASIC"}).json()
    assert "content" not in basic and basic["view"] == "DOCUMENT_VIEW_BASIC"
    assert http.get(path, params={"view": "1"}).json() == basic
    assert http.get("/v1alpha/" + name).json() == doc
    names = [name + "/api-calls", name, name + "/api-calls"]
    batch = http.get("/v1/documents:batchGet", params=[("names", n) for n in names]).json()
    assert [d["name"] for d in batch["documents"]] == names
    cases = [
        (http.get(path, params={"view": "SIDEWAYS"}), 400, "INVALID_ARGUMENT", "view"),
        (http.get("/v1/documents:batchGet"), 400, "INVALID_ARGUMENT", "names"),
        (
            http.get("/v1/documents:batchGet", params=[("names", name)] * 21),
            400,
            "INVALID_ARGUMENT",
            "at most 20",
        ),
        (http.get("/v1/documents/not a name"), 400, "INVALID_ARGUMENT", "not"),
        (http.get(path + "x"), 404, "NOT_FOUND", f"nearest cached to {name}x: {name}"),
        (
            http.get(SEARCH, params={"query": "x", "pageSize": "many"}),
            400,
            "INVALID_ARGUMENT",
            "page_size",
        ),
        (
            http.get(SEARCH, params={"query": "x", "filter": "size > 3"}),
            400,
            "INVALID_ARGUMENT",
            "",
        ),
        (http.post("/v1:answerQuery", content=b"{not json"), 400, "INVALID_ARGUMENT", "JSON"),
        (
            http.post("/v1:answerQuery", json={"query": "q", "model": "x"}),
            400,
            "INVALID_ARGUMENT",
            'Unknown name "model"',
        ),
        (http.post(path), 404, "NOT_FOUND", "Method not found"),
        (http.get("/v1/nothing/here"), 404, "NOT_FOUND", "Method not found"),
    ]
    for response, status, code, words in cases:
        assert response.status_code == status, response.text
        assert response.headers["content-type"].startswith("application/json")
        error = response.json()["error"]
        assert error["code"] == status and error["status"] == code
        assert words in error["message"], error["message"]
    answer = http.post("/v1:answerQuery", json={"query": "service worker lifetime"}).json()
    assert answer["answer"]["answerText"] and answer["answer"]["references"]


def test_upstream_failures_keep_google_statuses(store_mirror, serve_client, emulator):
    from tests.emulator import Fault

    a = store_mirror("a", upstream=emulator.base_url, api_key=emulator.api_key)
    http = serve_client(a, allow_fetch=True)
    emulator.inject(Fault(kind="status", status=429), times=-1, path=BATCH)
    response = http.get("/v1/" + TF[0])
    assert (
        response.status_code == 429 and response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
    )
    host = emulator.base_url.split("//", 1)[1]
    assert host not in response.text and "DK_MIRROR_" not in response.text  # the operator's
    emulator.reset()
    emulator.inject(Fault(kind="status", status=503), times=-1, path=BATCH)
    response = http.get("/v1/" + TF[0])
    assert response.status_code == 503 and response.json()["error"]["status"] == "UNAVAILABLE"
    assert host not in response.text
    emulator.reset()
    emulator.api_key = "rotated"  # A's key no longer works: A's problem, not the caller's
    response = http.get("/v1/" + TF[0])
    assert response.status_code == 502 and "upstream failed" in response.json()["error"]["message"]


@pytest.mark.slow
def test_token_via_api_key_header_lets_a_mirror_chain(store_mirror, serve_app, emulator, tmp_path):
    a = store_mirror("a", upstream=emulator.base_url, api_key=emulator.api_key)
    url = serve_app(a, allow_fetch=True, token=TOKEN)
    for transport in ("rest", "mcp"):
        b = store_mirror(f"b-{transport}", upstream=url, transport=transport, api_key=TOKEN)
        assert [d.name for d in b.get_documents(TF).documents] == TF
        wrong = store_mirror(f"w-{transport}", upstream=url, transport=transport, api_key="nope")
        with pytest.raises(AuthError):
            wrong.get_documents(TF)
    with pytest.raises((InvalidInput, NotFound)):
        store_mirror("c", upstream=url, api_key=TOKEN).get_documents(["documents/x.dev/none"])
