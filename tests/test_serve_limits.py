"""Limits that keep `dk-mirror serve` standing: request body size, idle and half-open sockets."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest

LIMIT = 1024 * 1024


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def _read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def _assert_413(status: int, body: bytes) -> None:
    assert status == 413
    error = json.loads(body)["error"]
    assert error["code"] == 413 and error["status"] == "INVALID_ARGUMENT"
    assert "larger than this server accepts" in error["message"]


@pytest.mark.parametrize("path", ["/v1:answerQuery", "/v1alpha:answerQuery", "/mcp", "/"])
def test_a_declared_body_over_the_limit_is_refused_unread(sample_mirror, serve_client, path):
    body = json.dumps({"query": "x" * (LIMIT + 1)}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    response = serve_client(sample_mirror).post(path, content=body, headers=headers)
    _assert_413(response.status_code, response.content)


def test_a_streamed_body_is_counted_and_refused_past_the_limit(served_sample):
    url = served_sample
    with _connect(url) as sock:
        host = urlsplit(url).netloc
        sock.sendall(
            f"POST /v1:answerQuery HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"x" * 65536
        # No Content-Length: the server must count the chunks. Exactly the limit, then one
        # byte more and no end: the answer must come without the body ever finishing. (More
        # bytes would sit unread when the server closes, and its RST would drop the answer.)
        for _ in range(LIMIT // len(chunk)):
            sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        sock.sendall(b"1\r\nx\r\n")
        head, _, body = _read_all(sock).partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower()
    _assert_413(int(head.split(b" ", 2)[1]), body)


def test_a_body_under_the_limit_reaches_the_route(served_sample):
    url = served_sample
    # Large but legal in size: the route itself answers (Google's unknown-field 400).
    body = json.dumps({"query": "q", "padding": "x" * (LIMIT - 100)})
    response = httpx.post(url + "/v1:answerQuery", content=body)
    assert response.status_code == 400
    assert 'Unknown name "padding"' in response.json()["error"]["message"]
    # And a chunked body of the same size is passed on whole.
    chunks = (body[i : i + 10000].encode() for i in range(0, len(body), 10000))
    streamed = httpx.post(url + "/v1:answerQuery", content=chunks)
    assert streamed.status_code == 400
    assert 'Unknown name "padding"' in streamed.json()["error"]["message"]


@pytest.fixture
def quick_deadlines(monkeypatch):
    """Header and keep-alive deadlines short enough for a test (read when a server starts)."""
    from mirror.serve import runner
    from mirror.serve.header_deadline import HeaderDeadlineProtocol

    monkeypatch.setattr(HeaderDeadlineProtocol, "header_seconds", 0.5)
    monkeypatch.setattr(runner, "KEEP_ALIVE_SECONDS", 1)


def _closed_within(sock: socket.socket, seconds: float, dribble: bytes = b"") -> float:
    """Seconds until the server closes `sock` (sending `dribble` a byte at a time meanwhile)."""
    start = time.monotonic()
    sock.settimeout(0.1)
    while time.monotonic() - start < seconds:
        if dribble:
            sock.sendall(dribble[:1])
            dribble = dribble[1:]
        try:
            if sock.recv(65536) == b"":
                return time.monotonic() - start
        except TimeoutError:
            continue
        except ConnectionResetError:
            return time.monotonic() - start
    raise AssertionError(f"the server kept the connection open for {seconds} s")


@pytest.mark.serial
@pytest.mark.parametrize(
    "sent",
    [b"", b"GET /v1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n"],
    ids=["silent", "half-sent headers"],
)
def test_a_connection_that_never_finishes_its_headers_is_closed(
    sample_mirror, quick_deadlines, serve_app, sent
):
    url = serve_app(sample_mirror)
    with _connect(url) as sock:
        sock.sendall(sent)
        assert _closed_within(sock, 5) < 3


@pytest.mark.serial
def test_headers_dribbled_a_byte_at_a_time_do_not_hold_the_connection(
    sample_mirror, quick_deadlines, serve_app
):
    url = serve_app(sample_mirror)
    with _connect(url) as sock:
        # Each byte arrives well inside the deadline; the whole never does.
        assert _closed_within(sock, 5, dribble=b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 100) < 3


@pytest.mark.serial
def test_keep_alive_serves_several_requests_then_an_idle_connection_is_closed(
    sample_mirror, quick_deadlines, serve_app
):
    url = serve_app(sample_mirror)
    name = next(iter(sample_mirror.list_documents(limit=1))).name
    host = urlsplit(url).netloc
    with _connect(url) as sock:
        for _ in range(3):  # a client that keeps using its connection keeps it
            sock.sendall(f"GET /v1/{name} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            head = sock.recv(65536)
            assert head.startswith(b"HTTP/1.1 200"), head[:100]
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            received = len(head.partition(b"\r\n\r\n")[2])
            while received < length:
                received += len(sock.recv(65536))
            time.sleep(0.3)
        assert _closed_within(sock, 5) < 3
