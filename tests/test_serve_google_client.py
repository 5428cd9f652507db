"""Google's own client library against `dk-mirror serve`: a Google client works unchanged.

The official `google-developer-knowledge` package (module `google.developer_knowledge_v1`) is
pointed at a served mirror of the sample documents through its REST transport, with anonymous
credentials and plain HTTP on 127.0.0.1. Every call it makes (paths, `$alt=json;enum-encoding=int`,
numeric enums in query strings, JSON bodies, error bodies) must be understood by the mirror, and
every answer must parse into the client's messages with the values intact.

Nothing here may leave the machine: a guard refuses any socket connection that is not to a
loopback address, so a client that tried a metadata server or googleapis.com would fail loudly.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from google.api_core import exceptions as core_exceptions
from google.auth.credentials import AnonymousCredentials
from google.developer_knowledge_v1 import (
    AnswerQueryRequest,
    AnswerQueryResponse,
    BatchGetDocumentsRequest,
    BatchGetDocumentsResponse,
    DeveloperKnowledgeClient,
    Document,
    DocumentView,
    GetDocumentRequest,
    SearchDocumentChunksRequest,
    SearchDocumentChunksResponse,
)
from google.developer_knowledge_v1.services.developer_knowledge.transports.rest import (
    DeveloperKnowledgeRestTransport,
)

from mirror.records import read_sample

SAMPLE = {doc.name: doc for doc in read_sample()}
NAME = "documents/developer.chrome.com/docs/extensions/migrating"
TF = "documents/www.tensorflow.org/hub/caching"
MISSING = "documents/www.tensorflow.org/guide/keras"
# What each successful answer must parse into, by the end of its path.
MESSAGES = {
    ":batchGet": BatchGetDocumentsResponse,
    ":searchDocumentChunks": SearchDocumentChunksResponse,
    ":answerQuery": AnswerQueryResponse,
}


def _loopback(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX and the like never leave the machine
        return True
    host = address[0]
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every outgoing connection that is not to 127.0.0.0/8 or ::1, and keep google-auth
    and the client off metadata servers, client certificates and mTLS endpoints."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if not _loopback(address):
            raise AssertionError(f"the client tried to leave the machine: {address!r}")
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _loopback(address):
            raise AssertionError(f"the client tried to leave the machine: {address!r}")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    monkeypatch.setenv("GOOGLE_API_USE_CLIENT_CERTIFICATE", "false")
    monkeypatch.setenv("GOOGLE_API_USE_MTLS_ENDPOINT", "never")
    for var in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_UNIVERSE_DOMAIN", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def wire() -> list[Any]:
    """Every HTTP response the client received (requests.Response), in order."""
    return []


@pytest.fixture
def client(served_sample: str, wire: list[Any]) -> Iterator[DeveloperKnowledgeClient]:
    """The official client, REST transport, anonymous, on the served sample mirror (one
    server for the module: every test here only reads)."""
    url = urlsplit(served_sample)
    assert url.hostname == "127.0.0.1"
    transport = DeveloperKnowledgeRestTransport(
        host=url.netloc, url_scheme="http", credentials=AnonymousCredentials()
    )

    def check(response: Any, *args: Any, **kwargs: Any) -> None:
        # The client parses leniently (ignore_unknown_fields=True), which would hide a field
        # the mirror misnames; here every answer must parse strictly into its message.
        wire.append(response)
        assert urlsplit(response.url).netloc == url.netloc
        assert response.headers["content-type"].startswith("application/json")
        if response.status_code >= 400:
            error = response.json()["error"]
            assert error["code"] == response.status_code and error["status"] and error["message"]
            return
        path = urlsplit(response.url).path
        message = next((m for end, m in MESSAGES.items() if path.endswith(end)), Document)
        message.from_json(response.text, ignore_unknown_fields=False)

    # The transport's session is a requests.Session (google-auth's AuthorizedSession).
    transport._session.hooks["response"].append(check)
    with DeveloperKnowledgeClient(transport=transport) as made:
        assert made.api_endpoint == f"http://{url.netloc}"
        yield made


def _same_as_sample(doc: Document, *, content: bool) -> None:
    want = SAMPLE[doc.name]
    assert doc.uri == want.uri and doc.title == want.title
    assert doc.description == want.description and doc.data_source == want.data_source
    assert doc.content_length_bytes == len(want.content.encode())
    assert doc.content == (want.content if content else "")


def test_get_document_in_the_default_and_basic_views(client, wire):
    doc = client.get_document(name=NAME)
    assert doc.name == NAME and doc.view == DocumentView.DOCUMENT_VIEW_CONTENT
    _same_as_sample(doc, content=True)
    basic = client.get_document(
        request=GetDocumentRequest(name=NAME, view=DocumentView.DOCUMENT_VIEW_BASIC)
    )
    assert basic.view == DocumentView.DOCUMENT_VIEW_BASIC
    _same_as_sample(basic, content=False)
    full = client.get_document(request={"name": TF, "view": DocumentView.DOCUMENT_VIEW_FULL})
    assert full.view == DocumentView.DOCUMENT_VIEW_FULL
    _same_as_sample(full, content=True)
    # The client sends enums as numbers and asks for numeric enums in answers (the mirror
    # answers with names, which every proto3 JSON parser, this client's included, accepts).
    queries = [parse_qs(urlsplit(r.url).query) for r in wire]
    assert [q.get("view") for q in queries] == [None, ["1"], ["2"]]
    assert all(q["$alt"] == ["json;enum-encoding=int"] for q in queries)
    assert [urlsplit(r.url).path for r in wire] == ["/v1/" + NAME, "/v1/" + NAME, "/v1/" + TF]


def test_batch_get_documents_keeps_request_order(client):
    names = [TF, NAME + "/api-calls", NAME, TF]
    response = client.batch_get_documents(request=BatchGetDocumentsRequest(names=names))
    assert [d.name for d in response.documents] == names
    for doc in response.documents:
        _same_as_sample(doc, content=True)
    basic = client.batch_get_documents(
        request={"names": names[:2], "view": DocumentView.DOCUMENT_VIEW_BASIC}
    )
    assert [d.name for d in basic.documents] == names[:2]
    assert all(
        d.view == DocumentView.DOCUMENT_VIEW_BASIC and not d.content for d in basic.documents
    )


def test_search_pager_follows_next_page_token_and_stops(client):
    pager = client.search_document_chunks(
        request=SearchDocumentChunksRequest(query="service worker", page_size=3)
    )
    pages = []
    for page in pager.pages:
        pages.append(page)
        assert len(pages) <= 50, "the pager never stopped"
    assert len(pages) > 2 and not pages[-1].next_page_token
    assert all(p.next_page_token for p in pages[:-1])
    hits = [chunk for page in pages for chunk in page.results]
    assert all(0 < len(page.results) <= 3 for page in pages)
    assert len({(c.parent, c.id) for c in hits}) == len(hits)
    for chunk in hits:
        assert chunk.parent in SAMPLE and chunk.content and chunk.relevance_score > 0
        assert chunk.document.name == chunk.parent
    # Iterating the pager itself gives the same chunks, in the same order.
    again = client.search_document_chunks(request={"query": "service worker", "page_size": 3})
    assert [(c.parent, c.id) for c in again] == [(c.parent, c.id) for c in hits]


def test_search_filter_is_applied(client):
    tf = 'data_source = "www.tensorflow.org"'
    results = list(
        client.search_document_chunks(request={"query": "models", "page_size": 20, "filter": tf})
    )
    assert results and all(c.parent.startswith("documents/www.tensorflow.org/") for c in results)


def test_answer_query_parses(client):
    response = client.answer_query(request=AnswerQueryRequest(query="service worker lifetime"))
    answer = response.answer
    assert answer.answer_text and answer.references
    for reference in answer.references:
        chunk = reference.document_reference.document_chunk
        assert chunk.parent in SAMPLE and chunk.content
    for citation in answer.citations:
        assert 0 <= citation.start_index <= citation.end_index <= len(answer.answer_text.encode())
        assert all(0 <= s.reference_index < len(answer.references) for s in citation.sources)


def test_unknown_document_is_not_found(client):
    with pytest.raises(core_exceptions.NotFound) as raised:
        client.get_document(name=MISSING)
    assert raised.value.code == 404 and MISSING in raised.value.message
    with pytest.raises(core_exceptions.NotFound):
        client.batch_get_documents(request={"names": [NAME, MISSING]})


def _status_of(error: core_exceptions.GoogleAPICallError) -> str:
    response = error.response
    assert response is not None
    return str(response.json()["error"]["status"])


def test_bad_filter_and_bad_requests_are_invalid_argument(client):
    # Over REST, google-api-core picks the exception class from the HTTP status alone, so a 400
    # is `BadRequest` (InvalidArgument's base; only the gRPC transport raises InvalidArgument
    # itself): the same as Google's own server gives this client. The body says INVALID_ARGUMENT.
    with pytest.raises(core_exceptions.BadRequest) as raised:
        list(client.search_document_chunks(request={"query": "x", "filter": "size > 3"}))
    assert raised.value.code == 400 and _status_of(raised.value) == "INVALID_ARGUMENT"
    assert "filter" in raised.value.message
    with pytest.raises(core_exceptions.BadRequest) as raised:
        client.batch_get_documents(request={"names": [NAME] * 21})
    assert _status_of(raised.value) == "INVALID_ARGUMENT"
