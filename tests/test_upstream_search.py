"""search_chunks over REST and MCP against the emulator: paging, filters, limits, retries, pacing."""

from __future__ import annotations

import logging

import pytest

from mirror.config import ENV_SEARCH_RATE, Settings
from mirror.errors import BadRequest, ConfigError, InvalidInput, MirrorError, QuotaExceeded
from mirror.models import DocumentChunk, SearchPage
from mirror.upstream import Upstream, open_upstream
from mirror.upstream.mcp_payloads import search_page
from mirror.upstream.retry import RetryPolicy
from tests.emulator import Emulator, Fault
from tests.fakes import FakeTime
from tests.upstream_fixtures import open_client

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

CANARY = "AIzaSyCANARY-search-1a2b3c4d5e6f-never-leak"
SEARCH_PATH = "/v1/documents:searchDocumentChunks"
QUERY = "keras callbacks"  # 91 chunks in the fixture corpus, 11 of them on Chrome
CHROME = 'data_source = "developer.chrome.com"'


def walk(upstream: Upstream, page_size: int, filter: str | None = None) -> list[SearchPage]:
    pages = [upstream.search_chunks(QUERY, page_size=page_size, filter=filter)]
    while pages[-1].next_page_token:
        token = pages[-1].next_page_token
        pages.append(
            upstream.search_chunks(QUERY, page_size=page_size, page_token=token, filter=filter)
        )
        assert len(pages) < 200, "paging does not end"
    return pages


def keys(chunks: tuple[DocumentChunk, ...] | list[DocumentChunk]) -> list[tuple[str, str | None]]:
    return [(c.parent, c.id) for c in chunks]


# -- REST -------------------------------------------------------------------------------------


def test_rest_paging_walks_every_page_once(rest: Upstream, emulator: Emulator) -> None:
    pages = walk(rest, page_size=7)
    hits = [c for p in pages for c in p.results]
    assert len(pages) > 2, "the query should need several pages"
    assert all(len(p.results) == 7 for p in pages[:-1]) and 0 < len(pages[-1].results) <= 7
    assert pages[-1].next_page_token is None
    assert len(set(keys(hits))) == len(hits), "a chunk came back on two pages"
    # The pages together are exactly the ranking one big page gives, in the same order.
    whole = rest.search_chunks(QUERY, page_size=100)
    assert len(hits) < 100 and whole.next_page_token is None
    assert keys(hits) == keys(whole.results)
    # Each request carried the token the previous page gave, and the first carried none.
    sent = [r.query for r in emulator.requests if r.path == SEARCH_PATH][: len(pages)]
    assert "pageToken" not in sent[0]
    assert [q["pageToken"][0] for q in sent[1:]] == [p.next_page_token for p in pages[:-1]]


def test_rest_results_carry_document_metadata_and_score(rest: Upstream) -> None:
    page = rest.search_chunks(QUERY)
    assert 0 < len(page.results) <= 5  # upstream's default page size
    for chunk in page.results:
        assert chunk.parent.startswith("documents/") and chunk.id and chunk.content
        assert chunk.document is not None and chunk.document.name == chunk.parent
        assert chunk.document.content is None and chunk.document.title is not None
        assert chunk.relevance_score is not None and 0.0 <= chunk.relevance_score <= 1.0
    scores = [c.relevance_score or 0.0 for c in page.results]
    assert scores == sorted(scores, reverse=True)


def test_rest_sends_only_what_was_given(rest: Upstream, emulator: Emulator) -> None:
    rest.search_chunks(QUERY)
    rest.search_chunks(QUERY, page_size=3, filter=CHROME)
    first, second = (r.query for r in emulator.requests)
    assert first == {"query": [QUERY]}
    assert second == {"query": [QUERY], "pageSize": ["3"], "filter": [CHROME]}


def test_rest_page_size_over_100_is_coerced(rest: Upstream, emulator: Emulator) -> None:
    page = rest.search_chunks("chrome", page_size=250)
    assert emulator.requests[-1].query["pageSize"] == ["100"]
    assert len(page.results) == 100 and page.next_page_token


@pytest.mark.parametrize("size", [0, -3])
def test_page_size_below_one_is_refused_without_a_request(
    emulator: Emulator, transport: str, size: int
) -> None:
    upstream = open_client(emulator, transport)
    with pytest.raises(InvalidInput, match="page size"):
        upstream.search_chunks(QUERY, page_size=size)
    upstream.close()
    assert emulator.count() == 0


def test_rest_filter_is_passed_through(rest: Upstream, emulator: Emulator) -> None:
    pages = walk(rest, page_size=20, filter=CHROME)
    hits = [c for p in pages for c in p.results]
    assert hits and all(
        c.document and c.document.data_source == "developer.chrome.com" for c in hits
    )
    unfiltered = [c for p in walk(rest, page_size=100) for c in p.results]
    assert len(hits) < len(unfiltered)  # the query matches tensorflow.org pages as well
    assert all(r.query.get("filter") == [CHROME] for r in emulator.requests[: len(pages)])


def test_rest_bad_filter_is_a_bad_request(rest: Upstream, emulator: Emulator) -> None:
    with pytest.raises(BadRequest) as info:
        rest.search_chunks(QUERY, filter="dataSource = chrome")
    assert info.value.status == 400 and info.value.code == "INVALID_ARGUMENT"
    assert "filter" in str(info.value).lower()
    assert info.value.hint and "data_source" in info.value.hint
    assert emulator.count(path=SEARCH_PATH) == 1  # a 400 is not retried


# -- both transports --------------------------------------------------------------------------


@pytest.fixture(params=["rest", "mcp"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize(
    ("query", "why"),
    [("", "empty"), ("   ", "empty"), ("x" * 501, "501 characters")],
)
def test_bad_queries_are_refused_without_a_request(
    emulator: Emulator, transport: str, query: str, why: str
) -> None:
    upstream = open_client(emulator, transport)
    with pytest.raises(InvalidInput) as info:
        upstream.search_chunks(query)
    upstream.close()
    assert why in info.value.message and "INVALID_ARGUMENT" in info.value.message
    assert emulator.count() == 0


def test_a_query_of_exactly_500_characters_is_sent(emulator: Emulator, transport: str) -> None:
    upstream = open_client(emulator, transport)
    page = upstream.search_chunks("keras " * 83 + "te")  # 500 characters
    upstream.close()
    assert page.results and emulator.count() == 1


def test_a_long_filter_is_refused_without_a_request(rest: Upstream, emulator: Emulator) -> None:
    with pytest.raises(InvalidInput, match="filter"):
        rest.search_chunks(QUERY, filter=CHROME + " OR" + ' uri != "x"' * 60)
    assert emulator.count() == 0


def test_503_on_search_is_retried_then_succeeds(emulator: Emulator, transport: str) -> None:
    where = {"path": SEARCH_PATH} if transport == "rest" else {"tool": "search_documents"}
    emulator.inject(Fault("status", status=503), times=2, **where)  # type: ignore[arg-type]
    emulator.inject(Fault("drop"), times=1, **where)  # type: ignore[arg-type]
    upstream = open_client(emulator, transport)
    page = upstream.search_chunks(QUERY)
    upstream.close()
    assert page.results
    assert emulator.count(**where) == 4  # type: ignore[arg-type]


def test_search_quota_exhaustion_is_retried_then_names_the_search_quota(
    emulator: Emulator, transport: str
) -> None:
    where = {"path": SEARCH_PATH} if transport == "rest" else {"tool": "search_documents"}
    emulator.inject(Fault("status", status=429), times=-1, **where)  # type: ignore[arg-type]
    upstream = open_client(emulator, transport)
    with pytest.raises(QuotaExceeded) as info:
        upstream.search_chunks(QUERY)
    upstream.close()
    assert emulator.count(**where) == 5  # a per-minute quota refills: worth waiting for
    assert info.value.hint and "SearchDocumentChunks" in info.value.hint
    assert ENV_SEARCH_RATE in info.value.hint


# -- MCP --------------------------------------------------------------------------------------


def test_mcp_search_returns_parent_id_content(mcp: Upstream, rest: Upstream) -> None:
    page = mcp.search_chunks(QUERY)
    assert 0 < len(page.results) <= 5 and page.next_page_token is None
    for chunk in page.results:
        assert chunk.parent.startswith("documents/") and chunk.id and chunk.content
        assert chunk.document is None and chunk.relevance_score is None
    # The same ranking as REST's first page: one corpus, one search.
    assert keys(page.results) == keys(rest.search_chunks(QUERY, page_size=5).results)


def test_mcp_page_size_cuts_results_client_side(mcp: Upstream, emulator: Emulator) -> None:
    page = mcp.search_chunks(QUERY, page_size=2)
    assert len(page.results) == 2
    sent = emulator.requests[-1].json["params"]
    assert sent == {"name": "search_documents", "arguments": {"query": QUERY}}


@pytest.mark.parametrize(
    ("extra", "refused"),
    [
        ({"page_token": "CAUQABgB"}, "page token"),
        ({"filter": CHROME}, "filter"),
        ({"page_token": "t", "filter": CHROME}, "page token and filter"),
    ],
)
def test_mcp_refuses_paging_and_filters_without_a_request(
    mcp: Upstream, emulator: Emulator, extra: dict[str, str], refused: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        mcp.search_chunks(QUERY, **extra)  # type: ignore[arg-type]
    assert refused in info.value.message
    assert info.value.hint and "--transport rest" in info.value.hint
    assert emulator.count() == 0


def test_mcp_results_keep_extra_fields_a_server_adds() -> None:
    payload = {
        "results": [
            {
                "parent": "documents/web.dev/a",
                "id": "c0",
                "content": "alpha",
                "relevanceScore": 0.5,
                "document": {"name": "documents/web.dev/a", "title": "A"},
            },
            {"parent": "documents/web.dev/b", "id": "c3", "content": "beta"},
        ],
        "nextPageToken": "never-usable-over-mcp",
    }
    page = search_page(payload, None, "test")
    first, second = page.results
    assert first.relevance_score == 0.5 and first.document and first.document.title == "A"
    assert second.document is None and page.next_page_token is None
    assert search_page({}, 3, "test").results == ()


# -- pacing, settings, the key ----------------------------------------------------------------


def test_search_is_paced_in_its_own_bucket(emulator: Emulator) -> None:
    fake = FakeTime()
    settings = Settings(
        db_url="sqlite://",
        upstream=emulator.base_url,
        api_key="test-key",
        get_per_minute=2,
        search_per_minute=2,
    )
    upstream = open_upstream(settings, retry=RetryPolicy(sleep=fake.sleep, clock=fake.clock))
    name = "documents/www.tensorflow.org/README"
    upstream.batch_get([name])
    upstream.search_chunks(QUERY)
    assert fake.slept == []  # one of each: the get's slot does not hold up the search
    upstream.search_chunks(QUERY)
    assert fake.slept == [pytest.approx(30.25)]  # 2/min: one interval, (60 + 0.5 s slack) / 2
    upstream.close()


def test_search_rate_comes_from_the_environment() -> None:
    assert Settings.resolve({}, db="x.sqlite3").search_per_minute == 100
    assert Settings.resolve({ENV_SEARCH_RATE: "7"}, db="x.sqlite3").search_per_minute == 7
    with pytest.raises(ConfigError, match=ENV_SEARCH_RATE):
        Settings.resolve({ENV_SEARCH_RATE: "0"}, db="x.sqlite3")


def test_the_key_never_leaks(
    emulator: Emulator, transport: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    emulator.api_key = CANARY
    upstream = open_client(emulator, transport, key=CANARY)
    texts = [repr(upstream), upstream.label]
    upstream.search_chunks(QUERY, page_size=3)
    failures: list[tuple[dict[str, str], type[MirrorError]]] = [({"filter": "bad ="}, MirrorError)]
    emulator.inject(Fault("status", status=429), times=-1)
    failures.append(({}, QuotaExceeded))
    for extra, error in failures:
        with pytest.raises(error) as info:
            upstream.search_chunks(QUERY, **extra)  # type: ignore[arg-type]
        texts += [str(info.value), repr(info.value)]
    upstream.close()
    assert all(CANARY not in text for text in texts)
    assert CANARY not in caplog.text
    assert emulator.requests
    for request in emulator.requests:
        assert CANARY not in request.path and "key" not in request.query
        assert request.headers.get("x-goog-api-key") == CANARY
