"""Limits that keep `dk-mirror serve` standing: request body size, idle and half-open sockets."""

from __future__ import annotations

import json
import socket
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
def test_a_declared_body_over_the_limit_is_refused_unread(sample_mirror, serve_app, path):
    url = serve_app(sample_mirror)
    body = json.dumps({"query": "x" * (LIMIT + 1)}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    response = httpx.post(url + path, content=body, headers=headers)
    _assert_413(response.status_code, response.content)


def test_a_streamed_body_is_counted_and_refused_past_the_limit(sample_mirror, serve_app):
    url = serve_app(sample_mirror)
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


def test_a_body_under_the_limit_reaches_the_route(sample_mirror, serve_app):
    url = serve_app(sample_mirror)
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
