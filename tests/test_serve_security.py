"""Security of `dk-mirror serve`: Host/Origin checks, the token rule, read-only, no key leaks."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from tests.conftest import CANARY_KEY
from tests.serve_fixtures import TOKEN
from tests.user_env import user_env

SAMPLE = "documents/developer.chrome.com/docs/extensions/migrating"
TF = "documents/www.tensorflow.org/hub/caching"
NOT_IN_SAMPLE = "documents/www.tensorflow.org/guide/keras"
ROUTES = ["/", "/mcp", "/v1/" + SAMPLE, "/v1/documents:batchGet?names=" + SAMPLE, "/v1alpha/x"]


@pytest.mark.parametrize("path", ROUTES)
@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example"},
        {"Host": "evil.example:8787"},
        {"Host": "127.0.0.1.nip.io"},
        {"Origin": "http://evil.example"},
        {"Origin": "https://evil.example:443"},
        {"Origin": "null"},
        {"Origin": "file://"},
    ],
)
def test_foreign_host_or_origin_is_403_on_every_route(sample_mirror, serve_client, path, headers):
    response = serve_client(sample_mirror).get(path, headers=headers)
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["status"] == "PERMISSION_DENIED" and (
        "Host" in error["message"] or "Origin" in error["message"]
    )


def test_own_names_and_origins_are_accepted(sample_mirror, serve_client):
    client = serve_client(sample_mirror)
    port = client.base_url.port
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}"):
        assert client.get("/v1/" + SAMPLE, headers={"Host": host}).status_code == 200, host
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}", f"http://[::1]:{port}"):
        assert client.get("/v1/" + SAMPLE, headers={"Origin": origin}).status_code == 200


@pytest.mark.parametrize("path", ROUTES)
def test_a_loopback_origin_on_another_port_is_refused(sample_mirror, serve_client, path):
    # A page served by another program on this machine (a dev server on :3000, say) is a
    # different origin: its scripts may not read the mirror or call its tools.
    client = serve_client(sample_mirror)
    port = client.base_url.port
    for origin in (
        f"http://127.0.0.1:{port + 1}",
        "http://localhost:3000",
        "http://localhost",
        f"https://[::1]:{port - 1}",
    ):
        response = client.get(path, headers={"Origin": origin})
        assert response.status_code == 403, origin
        assert "only pages it serves itself may" in response.json()["error"]["message"]


def test_the_mcp_sdk_check_accepts_exactly_the_same_origins():
    from mirror.serve import ServeOptions
    from mirror.serve.app import transport_security
    from mirror.serve.security import own_origins

    options = ServeOptions(port=8787, allowed_hosts=("docs.internal",))
    settings = transport_security(options)
    assert set(settings.allowed_origins) == own_origins(options)
    assert "http://localhost:8787" in settings.allowed_origins
    assert "https://docs.internal" in settings.allowed_origins  # a proxy on its default port
    # No port wildcards: the SDK matches `origin:*` patterns on any port.
    assert not any(o.endswith(":*") for o in settings.allowed_origins)
    assert "http://localhost" not in settings.allowed_origins


def test_allow_host_adds_a_name(sample_mirror, serve_client):
    client = serve_client(sample_mirror, allowed_hosts=("docs.internal",))
    ok = client.get("/v1/" + SAMPLE, headers={"Host": "docs.internal:80"})
    assert ok.status_code == 200
    assert client.get("/", headers={"Host": "docs.internal.evil"}).status_code == 403


def test_token_is_required_on_every_route_when_set(sample_mirror, serve_client):
    client = serve_client(sample_mirror, token=TOKEN)
    for path in ROUTES:
        response = client.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"]["status"] == "UNAUTHENTICATED"
        wrong = client.get(path, headers={"Authorization": "Bearer " + TOKEN[:-1] + "x"})
        assert wrong.status_code == 401
    good = {"Authorization": f"Bearer {TOKEN}"}
    assert client.get("/v1/" + SAMPLE, headers=good).status_code == 200
    assert client.get("/v1/" + SAMPLE, headers={"X-Goog-Api-Key": TOKEN}).status_code == 200
    # ?key= is ignored, never a way in: a token in a URL ends up in logs and histories.
    assert client.get("/v1/" + SAMPLE, params={"key": TOKEN}).status_code == 401
    # Host and Origin are still checked for a caller with the token.
    assert client.get("/", headers={**good, "Host": "evil.example"}).status_code == 403


def test_mcp_client_with_the_token(sample_mirror, serve_app):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    url = serve_app(sample_mirror, token=TOKEN) + "/mcp"

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool("get_documents", {"names": [SAMPLE]})

    result = anyio.run(main)
    assert not result.is_error and result.structured_content["documents"][0]["name"] == SAMPLE


# -- the rules at start-up -----------------------------------------------------------------------


def run_cli(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["serve", *args], env=env, catch_exceptions=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "myhost.example"])
def test_non_loopback_bind_without_a_token_refuses_to_start(host, tmp_path):
    result = run_cli("--host", host, "--db", str(tmp_path / "s.sqlite3"))
    assert result.exit_code == 1
    assert f"refusing to listen on {host} without a bearer token" in result.stderr
    assert "--token" in result.stderr and "DK_MIRROR_SERVE_TOKEN" in result.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--host", "0.0.0.0", "--token", "short"], "at least 16"),
        (["--mode", "live"], "add --allow-fetch"),
        (["--mode", "offline", "--allow-fetch"], "contradicts offline mode"),
        (["--offline", "--allow-fetch"], "contradicts --allow-fetch"),
    ],
)
def test_contradictory_or_weak_settings_refuse_to_start(args, words, tmp_path):
    result = run_cli(*args, "--db", str(tmp_path / "s.sqlite3"))
    assert result.exit_code == 1 and words in result.stderr


def test_fetching_from_google_without_a_key_refuses_to_start(tmp_path):
    result = run_cli("--allow-fetch", "--db", str(tmp_path / "s.sqlite3"))
    assert result.exit_code == 1 and "DEVELOPER_KNOWLEDGE_API_KEY" in result.stderr


@pytest.mark.slow
def test_non_loopback_bind_with_a_token_starts_and_requires_it(sample_mirror, tmp_path):
    db = sample_mirror.settings.db_url.removeprefix("sqlite:///")
    env = user_env()
    env.update({"DK_MIRROR_HOME": str(tmp_path / "home"), "DK_MIRROR_SERVE_TOKEN": TOKEN})
    command = [sys.executable, "-m", "mirror", "serve", "--host", "0.0.0.0", "--port", "0"]
    with subprocess.Popen(
        [*command, "--db", db], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        try:
            port = wait_for_port(process)
            base = f"http://127.0.0.1:{port}"
            assert httpx.get(f"{base}/v1/{SAMPLE}").status_code == 401
            ok = httpx.get(f"{base}/v1/{SAMPLE}", headers={"Authorization": f"Bearer {TOKEN}"})
            assert ok.status_code == 200 and ok.json()["name"] == SAMPLE
        finally:
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
    assert TOKEN not in err.decode() and not out.strip()


def wait_for_port(process: subprocess.Popen[bytes], timeout: float = 30) -> int:
    """The port from the start-up line on stderr."""
    assert process.stderr
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        ready, _, _ = select.select([process.stderr], [], [], 0.2)
        if ready:
            seen += os.read(process.stderr.fileno(), 4096)
            match = re.search(rb"dk-mirror serve: http://[0-9.]+:(\d+)", seen)
            if match:
                return int(match.group(1))
    raise AssertionError(f"the server did not start: {seen.decode(errors='replace')}")


# -- read-only by default, and the key never shows ----------------------------------------------


def test_read_only_by_default_never_contacts_upstream_or_writes(store_mirror, serve_app, emulator):
    from mcp import Client

    mirror = store_mirror("a", upstream=emulator.base_url, api_key=emulator.api_key)
    mirror.import_sample()
    store_file = Path(mirror.settings.db_url.removeprefix("sqlite:///"))
    url = serve_app(mirror)
    before = (mirror.stats(), store_file.stat().st_size)
    with httpx.Client(base_url=url) as http:
        assert http.get("/v1/" + NOT_IN_SAMPLE).status_code == 404
        assert http.get("/v1/documents:searchDocumentChunks", params={"query": "keras"}).is_success
        assert http.post("/v1:answerQuery", json={"query": "what is keras?"}).is_success

    async def main() -> Any:
        async with Client(url + "/mcp") as client:
            return await client.call_tool("get_documents", {"names": [NOT_IN_SAMPLE]})

    assert anyio.run(main).is_error
    assert emulator.count() == 0
    assert (mirror.stats(), store_file.stat().st_size) == before


def test_the_upstream_key_never_appears_in_any_response(store_mirror, serve_app, emulator):
    from mcp import Client

    emulator.api_key = CANARY_KEY
    mirror = store_mirror("a", upstream=emulator.base_url, api_key=CANARY_KEY)
    url = serve_app(mirror, allow_fetch=True)
    bodies: list[str] = []
    with httpx.Client(base_url=url) as http:

        def fetch(method: str, path: str, **kwargs: Any) -> None:
            response = http.request(method, path, **kwargs)
            bodies.append(response.text + repr(dict(response.headers)))

        fetch("GET", "/v1/" + TF)  # fetched through, written
        fetch("GET", "/v1/documents/www.tensorflow.org/no/such/page")  # upstream 404
        fetch("GET", "/v1/documents:searchDocumentChunks", params={"query": "keras"})
        fetch("POST", "/v1:answerQuery", json={"query": "what is keras?"})
        fetch("GET", "/v1/documents:batchGet", params={"names": "bad name"})
        for page in ("/", "/status", "/browse/", f"/doc/{TF}", "/search?q=keras"):
            fetch("GET", page)
        emulator.api_key = "rotated"  # now upstream rejects the mirror's key
        fetch("GET", "/v1/documents/www.tensorflow.org/guide/keras")
        emulator.api_disabled = True
        fetch("GET", "/v1/documents/www.tensorflow.org/hub/installation")
        fetch("GET", "/", headers={"Host": "evil.example"})

    async def main() -> None:
        async with Client(url + "/mcp") as client:
            for tool, arguments in [
                ("get_documents", {"names": ["documents/www.tensorflow.org/guide/data"]}),
                ("search_documents", {"query": "keras"}),
                ("answer_query", {"query": "keras"}),
            ]:
                result = await client.call_tool(tool, arguments)
                bodies.append(result.model_dump_json())

    anyio.run(main)
    assert any("upstream failed" in b and "API key not valid" in b for b in bodies)
    for body in bodies:
        assert CANARY_KEY not in body
