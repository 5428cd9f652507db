"""`dk-mirror serve --stdio` answers every request it read, even when stdin closes at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.user_env import user_env

pytestmark = [pytest.mark.slow]

REQUESTS = 100  # tools/call requests, after initialize


def test_every_request_read_before_end_of_input_is_answered(sample_mirror, tmp_path: Path):
    db = sample_mirror.settings.db_url.removeprefix("sqlite:///")
    names = [s.name for s in sample_mirror.list_documents(limit=20)]
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for i in range(1, REQUESTS + 1):
        arguments = {"names": names[i % 15 :][:5]}
        params = {"name": "get_documents", "arguments": arguments}
        messages.append({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
    keep = user_env()
    # Everything written at once, then end of input: a client piping a batch of requests.
    result = subprocess.run(
        [sys.executable, "-m", "mirror", "serve", "--stdio", "--db", db],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in messages),
        capture_output=True,
        env={**keep, "DK_MIRROR_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    answered = sorted(a["id"] for a in answers)
    assert answered == list(range(REQUESTS + 1)), (
        f"{REQUESTS + 1 - len(answered)} unanswered; stderr: {result.stderr.decode()[-2000:]}"
    )
    for answer in answers[1:]:
        assert not answer["result"]["isError"], answer
        assert len(answer["result"]["structuredContent"]["documents"]) == 5
    assert result.returncode == 0, result.stderr.decode()[-2000:]


def test_a_line_that_is_not_json_rpc_gets_json_rpc_s_error(sample_mirror, tmp_path: Path):
    db = sample_mirror.settings.db_url.removeprefix("sqlite:///")
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    call = {"name": "search_documents", "arguments": {"query": "chrome"}}
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        "this is not json {",
        json.dumps({"hello": "world"}),  # JSON, but no JSON-RPC message
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}),
    ]
    keep = user_env()
    result = subprocess.run(
        [sys.executable, "-m", "mirror", "serve", "--stdio", "--db", db],
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        env={**keep, "DK_MIRROR_HOME": str(tmp_path / "home")},
        timeout=120,
    )
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [a["error"]["code"] for a in answers if "error" in a and a["id"] is None]
    assert errors == [-32700, -32600]
    called = [a for a in answers if a.get("id") == 1]  # and the rest is answered as ever
    assert len(called) == 1 and not called[0]["result"]["isError"], called
    assert result.returncode == 0, result.stderr.decode()[-2000:]
