"""The REST client against the emulator over real HTTP: shapes, order, errors, the key's path."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import httpx
import pytest

from mirror.config import GOOGLE_UPSTREAM, Settings
from mirror.errors import (
    AuthError,
    ConfigError,
    MirrorError,
    NotFound,
    PermissionDenied,
    ProtocolError,
)
from mirror.models import View
from mirror.upstream import MAX_BATCH, open_upstream
from mirror.upstream.batching import iter_fetch
from mirror.upstream.pacing import Pacer
from mirror.upstream.rest import RestUpstream
from mirror.upstream.retry import RetryPolicy
from tests.emulator import Emulator
from tests.emulator_fixtures import corpus_documents

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

CANARY = "AIzaSyCANARY-rest-9f8e7d6c5b4a-never-leak"
NO_WAIT = RetryPolicy(sleep=lambda _s: None)


def open_rest(emulator: Emulator, key: str | None = "test-key") -> RestUpstream:
    settings = Settings(db_url="sqlite://", upstream=emulator.base_url, api_key=key)
    upstream = open_upstream(settings, retry=NO_WAIT)
    assert isinstance(upstream, RestUpstream)
    return upstream


@pytest.fixture
def rest(emulator: Emulator) -> Iterator[RestUpstream]:
    upstream = open_rest(emulator)
    yield upstream
    upstream.close()


@pytest.fixture
def names() -> list[str]:
    """Names of documents the emulator fixture holds, in corpus order."""
    records = corpus_documents("tensorflow.org") + corpus_documents("developer.chrome.com-en")[:200]
    return [r.get("name") or "documents/" + r["uri"].split("://", 1)[1] for r in records]


def batch_calls(emulator: Emulator) -> int:
    return emulator.count(path="/v1/documents:batchGet")


def test_batch_get_keeps_request_order(rest: RestUpstream, names: list[str]) -> None:
    wanted = [names[7], names[0], names[150], names[3]]
    docs = rest.batch_get(wanted)
    assert [d.name for d in docs] == wanted
    first = docs[0]
    assert first.content and first.uri and first.data_source and first.update_time
    assert first.view == View.CONTENT.value


def test_batch_get_basic_view_has_no_content(rest: RestUpstream, names: list[str]) -> None:
    docs = rest.batch_get(names[:2], View.BASIC)
    assert all(d.content is None and d.view == View.BASIC.value for d in docs)
    assert all(d.content_length_bytes for d in docs)


def test_empty_batch_makes_no_request(rest: RestUpstream, emulator: Emulator) -> None:
    assert rest.batch_get([]) == []
    assert emulator.count() == 0


def test_batch_get_refuses_more_than_twenty(rest: RestUpstream, names: list[str]) -> None:
    with pytest.raises(MirrorError):
        rest.batch_get(names[: MAX_BATCH + 1])


def test_batch_request_shape(rest: RestUpstream, emulator: Emulator, names: list[str]) -> None:
    rest.batch_get(names[:3], View.FULL)
    (request,) = emulator.requests
    assert request.method == "GET" and request.path == "/v1/documents:batchGet"
    assert request.query == {"names": names[:3], "view": ["DOCUMENT_VIEW_FULL"]}
    assert request.headers["x-goog-api-key"] == "test-key"
    assert request.headers["user-agent"].startswith("dk-mirror/")


def test_get_one_document(rest: RestUpstream, emulator: Emulator, names: list[str]) -> None:
    doc = rest.get(names[5], View.BASIC)
    assert doc.name == names[5] and doc.content is None
    (request,) = emulator.requests
    assert request.path == "/v1/" + names[5]
    with pytest.raises(NotFound) as info:
        rest.get("documents/www.tensorflow.org/no/such/page")
    assert info.value.names == ["documents/www.tensorflow.org/no/such/page"]


def test_get_keeps_slashes_in_the_path_and_escapes_the_rest() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        name = "documents/a.dev/x:y/z%41"
        return httpx.Response(200, json={"name": name})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    upstream = RestUpstream("http://up.test", "k3y-value", client, Pacer(100), NO_WAIT)
    upstream.get("documents/a.dev/x:y/z%41")
    upstream.close()
    assert seen[0].url.raw_path == b"/v1/documents/a.dev/x%3Ay/z%2541?view=DOCUMENT_VIEW_CONTENT"


def test_iter_fetch_splits_into_batches_of_twenty(
    rest: RestUpstream, emulator: Emulator, names: list[str]
) -> None:
    wanted = names[100:145]
    outcomes = list(iter_fetch(rest, wanted))
    assert [len(o.documents) for o in outcomes] == [20, 20, 5]
    assert [d.name for o in outcomes for d in o.documents] == wanted
    assert all(o.missing == [] for o in outcomes)
    assert batch_calls(emulator) == 3


@pytest.mark.parametrize("names_document", [True, False])
def test_one_missing_name_is_found_exactly(
    rest: RestUpstream, emulator: Emulator, names: list[str], names_document: bool
) -> None:
    emulator.batch_404_names_document = names_document
    ghost = "documents/www.tensorflow.org/this/page/does/not/exist"
    wanted = [*names[:13], ghost, *names[13:19]]
    (outcome,) = iter_fetch(rest, wanted)
    assert outcome.missing == [ghost]
    assert [d.name for d in outcome.documents] == [n for n in wanted if n != ghost]
    # Named: one failing call, one for the rest. Unnamed: a bisection, far fewer than 20.
    limit = 2 if names_document else 1 + 2 * math.ceil(math.log2(len(wanted)))
    assert batch_calls(emulator) <= limit


@pytest.mark.parametrize("names_document", [True, False])
def test_several_missing_names(
    rest: RestUpstream, emulator: Emulator, names: list[str], names_document: bool
) -> None:
    emulator.batch_404_names_document = names_document
    ghosts = [f"documents/www.tensorflow.org/ghost/{i}" for i in range(3)]
    wanted = [*names[:5], ghosts[0], *names[5:25], ghosts[1], ghosts[2], *names[25:40]]
    outcomes = list(iter_fetch(rest, wanted))
    assert [o.missing for o in outcomes] == [[ghosts[0]], [ghosts[1], ghosts[2]], []]
    found = [d.name for o in outcomes for d in o.documents]
    assert found == [n for n in wanted if n not in ghosts]
    assert batch_calls(emulator) < len(wanted)


def test_all_missing(rest: RestUpstream) -> None:
    ghosts = [f"documents/www.tensorflow.org/ghost/{i}" for i in range(4)]
    (outcome,) = iter_fetch(rest, ghosts)
    assert outcome.documents == [] and outcome.missing == ghosts


def test_wrong_documents_in_a_200_are_a_protocol_error(names: list[str]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        # Right shape, wrong order.
        asked = request.url.params.get_list("names")
        return httpx.Response(200, json={"documents": [{"name": n} for n in reversed(asked)]})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    upstream = RestUpstream("http://up.test", "k", client, Pacer(100), NO_WAIT)
    with pytest.raises(ProtocolError, match="in order"):
        upstream.batch_get(names[:2])
    upstream.close()


@pytest.mark.parametrize(
    ("switch", "error", "hint"),
    [
        (
            "api_disabled",
            PermissionDenied,
            "gcloud services enable developerknowledge.googleapis.com --project=PROJECT_ID",
        ),
        (
            "key_restricted",
            PermissionDenied,
            "gcloud services api-keys update KEY_NAME "
            "--api-target=service=developerknowledge.googleapis.com",
        ),
    ],
)
def test_project_problems_are_explained(
    rest: RestUpstream,
    emulator: Emulator,
    names: list[str],
    switch: str,
    error: type[MirrorError],
    hint: str,
) -> None:
    setattr(emulator, switch, True)
    with pytest.raises(error) as info:
        rest.batch_get(names[:2])
    assert hint in str(info.value)
    assert batch_calls(emulator) == 1


def test_a_bad_key_is_an_auth_error(emulator: Emulator, names: list[str]) -> None:
    upstream = open_rest(emulator, key="not-the-key")
    try:
        with pytest.raises(AuthError) as info:
            upstream.batch_get(names[:2])
    finally:
        upstream.close()
    assert "API key not valid" in str(info.value)
    assert "DEVELOPER_KNOWLEDGE_API_KEY" in str(info.value)
    assert "not-the-key" not in str(info.value)
    assert batch_calls(emulator) == 1


def test_no_key_for_a_keyed_emulator_is_an_auth_error(emulator: Emulator, names: list[str]) -> None:
    upstream = open_rest(emulator, key=None)
    try:
        with pytest.raises(AuthError):
            upstream.batch_get(names[:1])
    finally:
        upstream.close()
    assert "x-goog-api-key" not in emulator.requests[0].headers


def test_no_key_for_google_is_a_config_error_before_any_request() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(500)

    settings = Settings(db_url="sqlite://", upstream=GOOGLE_UPSTREAM, api_key=None)
    for transport in ("rest", "mcp"):
        with pytest.raises(ConfigError) as info:
            open_upstream(
                Settings(**{**_fields(settings), "transport": transport}),
                transport=httpx.MockTransport(handler),
            )
        assert "DEVELOPER_KNOWLEDGE_API_KEY" in str(info.value) and "--offline" in str(info.value)
    assert requests == []


def _fields(settings: Settings) -> dict[str, object]:
    return {f: getattr(settings, f) for f in settings.__dataclass_fields__}


def test_the_key_never_leaks(
    emulator: Emulator, names: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    emulator.api_key = CANARY
    upstream = open_rest(emulator, key=CANARY)
    texts = [repr(upstream), upstream.label]
    upstream.batch_get(names[:2])
    upstream.get(names[3])
    ghost = "documents/www.tensorflow.org/ghost"
    list(iter_fetch(upstream, [names[4], ghost]))
    for switch in ("api_disabled", "key_restricted"):
        setattr(emulator, switch, True)
        with pytest.raises(MirrorError) as info:
            upstream.batch_get(names[:2])
        texts += [str(info.value), repr(info.value)]
        setattr(emulator, switch, False)
    upstream.close()
    other = open_rest(emulator, key=CANARY + "-wrong")
    with pytest.raises(AuthError) as auth:
        other.batch_get(names[:1])
    other.close()
    texts += [str(auth.value), repr(auth.value)]
    assert all(CANARY not in text for text in texts)
    assert CANARY not in caplog.text
    for request in emulator.requests:
        assert CANARY not in request.path
        assert "key" not in request.query
        assert all(CANARY not in v for values in request.query.values() for v in values)
    assert emulator.requests[0].headers["x-goog-api-key"] == CANARY
