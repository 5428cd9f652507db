"""A base URL that names the wrong route: `/v1` is accepted, any other route the server lacks
is said to be a wrong URL, and no name is ever recorded as missing on such an answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mirror.config import Settings

HUB = "documents/www.tensorflow.org/hub"


@pytest.mark.parametrize("given", ["/v1", "/v1/"])
def test_a_base_url_ending_in_v1_is_the_api_base(cli_online, emulator, monkeypatch, given):  # type: ignore[no-untyped-def]
    assert Settings.resolve({}, upstream=emulator.base_url + given).upstream == emulator.base_url
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url + given)
    got = cli_online("get", f"{HUB}/caching")
    assert got.exit_code == 0, got.stderr
    assert "# " in got.stdout or got.stdout.strip()


def test_a_route_the_server_lacks_is_a_wrong_url_and_nothing_is_missing(  # type: ignore[no-untyped-def]
    cli_online, emulator, monkeypatch
):
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url + "/api")
    got = cli_online("get", f"{HUB}/caching")
    assert got.exit_code == 1, got.stderr  # not 3, "not found upstream"
    assert "the upstream URL looks wrong" in got.stderr and "Method not found" in got.stderr
    assert "not found upstream" not in got.stderr
    crawl = cli_online("crawl", f"{HUB}/caching", f"{HUB}/overview", "--depth", "1")
    assert crawl.exit_code == 1 and "the upstream URL looks wrong" in crawl.stderr
    # Fixed URL: the same crawl fetches the pages (none was remembered as missing).
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url)
    again = cli_online("crawl", f"{HUB}/caching", f"{HUB}/overview", "--depth", "0", "--json")
    assert again.exit_code == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["fetched"] == 2 and report["missing"] == []


class _NotFoundPages(BaseHTTPRequestHandler):
    """A web server with no API on it: every path is a 404 page (HTML, or an empty body)."""

    body = b""

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Type", "text/html" if self.body else "text/plain")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture(params=["html", "empty"])
def not_an_api(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    body = b"<html><body>404. That's an error. The requested URL was not found.</body></html>"
    handler = type("Pages", (_NotFoundPages,), {"body": body if request.param == "html" else b""})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        said = "an HTML page" if request.param == "html" else "an empty body"
        yield f"http://127.0.0.1:{server.server_address[1]}", said
    finally:
        server.shutdown()
        server.server_close()


def test_an_html_or_empty_404_says_the_url_looks_wrong(cli_online, monkeypatch, not_an_api):  # type: ignore[no-untyped-def]
    url, said = not_an_api
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", url)
    for args in (["get", f"{HUB}/caching"], ["fetch", f"{HUB}/caching", f"{HUB}/overview"]):
        result = cli_online(*args)
        assert result.exit_code == 1, (args, result.stderr)
        assert f"HTTP 404 with {said}" in result.stderr and "looks wrong" in result.stderr
        assert "not found upstream" not in result.stderr


def test_a_missing_document_is_still_not_found(cli_online):  # type: ignore[no-untyped-def]
    missing = cli_online("get", f"{HUB}/no-such-page")
    assert missing.exit_code == 3 and "not found upstream" in missing.stderr
