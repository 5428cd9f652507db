"""The MCP face of `dk-mirror serve`, driven by the `mcp` SDK's client: in memory, HTTP, stdio."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from tests.conftest import stored
from tests.emulator_mcp import TOOLS, TOOLS_LIST_FILE
from tests.user_env import user_env

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

TF = ["documents/www.tensorflow.org/hub/caching", "documents/www.tensorflow.org/hub/installation"]
SAMPLE = "documents/developer.chrome.com/docs/extensions/migrating"
REFERENCE = {tool["name"]: tool for tool in TOOLS}


def test_the_package_copy_of_the_tools_is_the_captured_payload() -> None:
    # mirror/serve/tool_schemas.py keeps its own copy (an installed package cannot read
    # tests/); it must stay the capture in tests/data, key order included.
    from mirror.serve.tool_schemas import TOOLS as PACKAGE_TOOLS

    captured = json.loads(TOOLS_LIST_FILE.read_text(encoding="utf-8"))["tools"]
    assert json.dumps(PACKAGE_TOOLS) == json.dumps(captured)


def listed(tools: Any) -> dict[str, dict[str, Any]]:
    """tools/list result as wire JSON, by name."""
    return {
        t.name: t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.tools
    }


def check_against_reference(tools: dict[str, dict[str, Any]]) -> None:
    assert sorted(tools) == sorted(REFERENCE)
    for name, tool in tools.items():
        ref = REFERENCE[name]
        assert tool["inputSchema"] == ref["inputSchema"], name
        assert tool["outputSchema"] == ref["outputSchema"], name
        assert tool["annotations"] == ref["annotations"], name
        assert tool["description"] == ref["description"], name


def payload(result: Any) -> dict[str, Any]:
    """A successful tool result's structuredContent, checked against the text block and schema."""
    assert not result.is_error, result.content[0].text
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    return dict(result.structured_content)


def validate(tool: str, data: dict[str, Any]) -> None:
    jsonschema.validate(data, REFERENCE[tool]["outputSchema"])


def error_text(result: Any) -> str:
    assert result.is_error and result.structured_content is None
    return str(result.content[0].text)


async def exercise(client: Any, names: list[str]) -> dict[str, Any]:
    """List the tools and call each one, as an agent would; returns what came back."""
    tools = listed(await client.list_tools())
    got = payload(await client.call_tool("get_documents", {"names": names}))
    search = payload(await client.call_tool("search_documents", {"query": "caching models"}))
    answer = payload(await client.call_tool("answer_query", {"query": "How are models cached?"}))
    miss = await client.call_tool("get_documents", {"names": [names[0] + "-typo"]})
    return {"tools": tools, "get": got, "search": search, "answer": answer, "miss": miss}


def check_exercise(seen: dict[str, Any], names: list[str]) -> None:
    check_against_reference(seen["tools"])
    assert [d["name"] for d in seen["get"]["documents"]] == names
    for doc in seen["get"]["documents"]:
        assert set(doc) <= {"name", "uri", "content", "description", "title"}
        assert doc["content"] and doc["uri"].startswith("https://")
    validate("get_documents", seen["get"])
    assert seen["search"]["results"], "the sample should match"
    assert all(set(r) <= {"parent", "id", "content"} for r in seen["search"]["results"])
    validate("search_documents", seen["search"])
    validate("answer_query", seen["answer"])
    assert all(r.startswith("documents/") for r in seen["answer"]["references"])
    text = error_text(seen["miss"])
    assert text.startswith("NOT_FOUND") and names[0] + "-typo" in text
    assert f"nearest cached to {names[0]}-typo: {names[0]}" in text
    assert "dk-mirror fetch " + names[0] + "-typo" in text


# -- in memory ---------------------------------------------------------------------------------


@pytest.mark.sqlite_only("local search on PostgreSQL is the pgsearch branch's")
def test_in_memory_client_lists_reference_tools_and_calls_each(sample_mirror):
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    server = build_server(sample_mirror, ServeOptions())
    names = [s.name for s in sample_mirror.list_documents(prefix=SAMPLE + "/", limit=3)]

    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            return await exercise(client, names)

    check_exercise(anyio.run(main), names)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("get_documents", {"names": [SAMPLE] * 21}, "INVALID_ARGUMENT (400): 21 names given"),
        ("get_documents", {"names": ["not a name"]}, "INVALID_ARGUMENT (400): document name"),
        ("get_documents", {"names": []}, "INVALID_ARGUMENT (400): no document names"),
        ("get_documents", {"names": "documents/x.dev/y"}, "valid list"),
        ("search_documents", {"query": "   "}, "INVALID_ARGUMENT (400): the search query is empty"),
        (
            "search_documents",
            {"query": "x" * 501},
            "INVALID_ARGUMENT (400): the search query is 501",
        ),
        ("answer_query", {"query": ""}, "INVALID_ARGUMENT (400): the question is empty"),
        # Each names what it was given: `dk-mirror answer` said "the query is 501 characters".
        ("answer_query", {"query": "x" * 501}, "INVALID_ARGUMENT (400): the question is 501"),
    ],
)
def test_bad_arguments_are_tool_errors(sample_mirror, tool, arguments, expected):
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    async def main() -> Any:
        async with Client(build_server(sample_mirror, ServeOptions())) as client:
            return await client.call_tool(tool, arguments)

    assert expected in error_text(anyio.run(main))


def test_offline_miss_names_the_nearest_and_how_to_fetch(sample_mirror):
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    server = build_server(sample_mirror, ServeOptions(mode="offline"))
    wanted = [SAMPLE, SAMPLE + "/api-calls", SAMPLE + "/api-callz"]

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool("get_documents", {"names": wanted})

    text = error_text(anyio.run(main))
    assert "1 document(s) not in this mirror's store" in text and "(offline, read-only)" in text
    # The close spelling is already requested, so it is not offered; its siblings are.
    assert f"nearest cached to {SAMPLE}/api-callz: {SAMPLE}/" in text
    assert f"{SAMPLE}/api-calls," not in text.split("nearest cached")[1]
    assert "dk-mirror fetch " + SAMPLE + "/api-callz" in text
    assert "--mode cache-first --allow-fetch" in text


# -- fetching modes, against the emulator -------------------------------------------------------


def test_fetch_modes(store_mirror, emulator):
    from mcp import Client

    from mirror.serve import ServeOptions
    from mirror.serve.mcp_server import build_server

    mirror = store_mirror(upstream=emulator.base_url, api_key=emulator.api_key)

    async def call(options: ServeOptions, tool: str, arguments: dict[str, Any]) -> Any:
        async with Client(build_server(mirror, options)) as client:
            return await client.call_tool(tool, arguments)

    batch = "/v1/documents:batchGet"
    # Read-only (the default): a miss is an error and nothing is asked upstream.
    assert "not in this mirror's store" in error_text(
        anyio.run(call, ServeOptions(), "get_documents", {"names": TF})
    )
    assert emulator.count() == 0
    # cache-first with --allow-fetch: fetched once, written through, then served from the store.
    fetching = ServeOptions(allow_fetch=True)
    first = payload(anyio.run(call, fetching, "get_documents", {"names": TF}))
    assert [d["name"] for d in first["documents"]] == TF and emulator.count(batch) == 1
    assert payload(anyio.run(call, fetching, "get_documents", {"names": TF})) == first
    assert emulator.count(batch) == 1
    assert set(stored(mirror, TF)) == set(TF)
    # live: every call goes upstream.
    live = ServeOptions(mode="live", allow_fetch=True)
    payload(anyio.run(call, live, "get_documents", {"names": TF}))
    assert emulator.count(batch) == 2
    # Search: cache-first replays a recorded page; live asks again.
    search = "/v1/documents:searchDocumentChunks"
    hits = payload(anyio.run(call, fetching, "search_documents", {"query": "keras callbacks"}))
    assert hits["results"] and emulator.count(search) == 1
    assert (
        payload(anyio.run(call, fetching, "search_documents", {"query": "keras callbacks"})) == hits
    )
    assert emulator.count(search) == 1
    payload(anyio.run(call, live, "search_documents", {"query": "keras callbacks"}))
    assert emulator.count(search) == 2
    # An upstream 404 is a tool error naming the document.
    ghost = "documents/www.tensorflow.org/no/such/page"
    text = error_text(anyio.run(call, fetching, "get_documents", {"names": [TF[0], ghost]}))
    assert text.startswith("NOT_FOUND (404): not found upstream: " + ghost)


# -- real HTTP ---------------------------------------------------------------------------------


@pytest.mark.sqlite_only("local search on PostgreSQL is the pgsearch branch's")
def test_http_client_lists_reference_tools_and_calls_each(sample_mirror, served_sample):
    from mcp import Client

    url = served_sample  # the same sample documents as sample_mirror's
    names = [s.name for s in sample_mirror.list_documents(prefix=SAMPLE + "/", limit=2)]

    async def main() -> dict[str, Any]:
        async with Client(url + "/mcp") as client:
            return await exercise(client, names)

    check_exercise(anyio.run(main), names)


def test_raw_tools_list_is_the_reference_payload_without_a_handshake(sample_mirror, serve_client):
    http = serve_client(sample_mirror)
    # As in Google's curl examples: tools/list and tools/call with no initialize, no session.
    headers = {"Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    reply = http.post("/mcp", json=body, headers=headers)
    assert reply.status_code == 200 and "mcp-session-id" not in reply.headers
    assert reply.json()["result"]["tools"] == TOOLS
    call = {"name": "get_documents", "arguments": {"names": [SAMPLE]}}
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    result = http.post("/mcp", json=body, headers=headers).json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["documents"][0]["name"] == SAMPLE
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]


# -- stdio -------------------------------------------------------------------------------------


def stdio_env(tmp_path: Path) -> dict[str, str]:
    keep = user_env()
    return {**keep, "DK_MIRROR_HOME": str(tmp_path / "home"), "PYTHONUNBUFFERED": "1"}


@pytest.mark.slow
@pytest.mark.sqlite_only("local search on PostgreSQL is the pgsearch branch's")
def test_stdio_client_lists_reference_tools_and_calls_each(sample_mirror, tmp_path):
    from mcp import Client, StdioServerParameters

    db = sample_mirror.settings.db_url.removeprefix("sqlite:///")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mirror", "serve", "--stdio", "--db", db],
        env=stdio_env(tmp_path),
    )
    names = [s.name for s in sample_mirror.list_documents(prefix=SAMPLE + "/", limit=2)]

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            return await exercise(client, names)

    check_exercise(anyio.run(main), names)


NOISY = """
import os, sys
import mirror.serve.app as app, mirror.serve.calls as calls
prepare, get = app.prepare, calls.get_documents
def noisy_prepare(*a, **k):
    print("stray print while starting")
    os.write(1, b"stray fd write while starting\\n")
    return prepare(*a, **k)
def noisy_get(*a, **k):
    print("stray print from a tool", flush=True)
    os.write(1, b"stray fd write from a tool\\n")
    return get(*a, **k)
app.prepare, calls.get_documents = noisy_prepare, noisy_get
from mirror.cli.main import main
sys.argv = ["dk-mirror", "serve", "--stdio", "--create", "--db", sys.argv[1]]
main()
"""


@pytest.mark.slow
def test_stdio_writes_nothing_but_json_rpc_to_stdout(tmp_path):
    # A fresh store (migrated at start-up) and code that prints to stdout on purpose.
    db = str(tmp_path / "fresh.sqlite3")
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "get_documents", "arguments": {"names": [SAMPLE]}}},
    ]  # fmt: skip
    with subprocess.Popen(
        [sys.executable, "-c", NOISY, db],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=stdio_env(tmp_path),
    ) as process:
        assert process.stdin
        process.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        process.stdin.flush()
        lines = read_lines(process, answers=3)
        rest, err = process.communicate(timeout=20)  # closes stdin: the server ends
    stderr = err.decode()
    assert not rest.strip(), rest
    replies = [json.loads(line) for line in lines]  # every line parses: nothing else got in
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert [r.get("id") for r in replies] == [1, 2, 3]
    assert "tools" in replies[1]["result"]
    assert "NOT_FOUND" in replies[2]["result"]["content"][0]["text"]
    for stray in ("print while starting", "fd write while starting", "print from a tool"):
        assert stray in stderr
    # Where a person looks (the client's server log): why every answer is empty, and no
    # chatter from the libraries that set the store up.
    assert "the store holds no documents" in stderr and "dk-mirror demo" in stderr
    assert " INFO alembic" not in stderr, stderr


def test_stdio_refuses_to_create_a_store_it_was_not_asked_to(tmp_path):
    """MCP Inspector starts the server with a reduced environment: the default store it finds
    is not the user's. A store that does not exist is an error naming --db, not a new empty
    store that answers nothing; --create makes one on purpose."""
    keep = user_env()
    reduced = {**keep, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    given = tmp_path / "typo.sqlite3"
    for args, env in ((["serve", "--stdio"], reduced), (["serve", "--stdio", "--db", str(given)], stdio_env(tmp_path))):  # fmt: skip
        refused = subprocess.run(
            [sys.executable, "-m", "mirror", *args],
            input=b"", capture_output=True, env=env, timeout=60,
        )  # fmt: skip
        err = refused.stderr.decode()
        assert refused.returncode == 1, err
        assert "no store at" in err and "does not create one" in err and "--db" in err, err
        assert "Traceback" not in err and refused.stdout == b""
    assert not given.exists()
    assert not (tmp_path / "home").exists() and not (tmp_path / "xdg").exists()
    created = subprocess.run(
        [sys.executable, "-m", "mirror", "serve", "--stdio", "--create", "--db", str(given)],
        input=b"", capture_output=True, env=stdio_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr.decode()
    assert given.is_file()


def read_lines(process: subprocess.Popen[bytes], answers: int, timeout: float = 30) -> list[str]:
    """stdout lines until `answers` JSON-RPC responses arrived (or the deadline)."""
    assert process.stdout
    lines: list[str] = []
    buffer = b""
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()
    while len(lines) < answers and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines += [line.decode() for line in complete if line.strip()]
    return lines


@pytest.mark.slow
def test_other_commands_do_not_import_the_web_stack(sample_mirror, tmp_path):
    db = sample_mirror.settings.db_url.removeprefix("sqlite:///")
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['dk-mirror', 'get', '--offline', '--db', {db!r}, {SAMPLE!r}]\n"
        "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "heavy = ('mcp', 'mcp_types', 'starlette', 'uvicorn', 'anyio', 'jinja2', 'pydantic')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=stdio_env(tmp_path), capture_output=True, text=True
    )
    assert done.stdout.startswith("# Migrate to Manifest V3")
    assert done.stderr.strip().splitlines()[-1] == "[]"
