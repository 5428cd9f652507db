"""A query that is not text (bytes that are not UTF-8 in a shell's arguments, a lone surrogate
escaped in a JSON body) is refused as invalid input on every surface, with a message that says
so: it crashed the model's tokenizer (`semantic search failed (TypeError: TextEncodeInput
must be ...)`, and a 500 from `serve`), and ranked its broken word by words."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mirror import limits
from mirror.errors import InvalidInput

from .cli_store import sample_env

JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The sample imported into a store of its own (words only: no model to load)."""
    # Arguments are decoded as UTF-8 (undecodable bytes become lone surrogates).
    return sample_env(tmp_path_factory.mktemp("query-text"), LC_ALL="C.UTF-8")


@pytest.mark.parametrize("command", ["search", "answer"])
def test_a_query_of_bytes_that_are_not_utf8_is_refused_by_the_cli(
    command: str, env: dict[str, str]
) -> None:
    # "café" typed in a Latin-1 terminal, read by a UTF-8 locale.
    done = subprocess.run(
        [
            sys.executable.encode(),
            b"-m",
            b"mirror",
            b"--offline",
            command.encode(),
            b"caf\xe9 worker",
        ],
        env=env,
        capture_output=True,
        timeout=120,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert "not valid UTF-8" in stderr and "Traceback" not in stderr
    assert not done.stdout


def test_a_lone_surrogate_in_a_json_query_is_a_400(sample_mirror, serve_client) -> None:  # type: ignore[no-untyped-def]
    http = serve_client(sample_mirror)
    # The escape is written as JSON carries it: no client library would encode the character.
    answer = b'{"query": "caf\\udce9 worker"}'
    response = http.post("/v1:answerQuery", content=answer, headers=JSON)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and "not valid UTF-8" in error["message"]
    # (MCP's SDK refuses such a body itself, as a JSON-RPC parse error.)


def test_text_in_any_script_passes() -> None:
    for query in ("café", "拡張機能", "확장 프로그램", "🚀 speed", "a\u0301"):
        assert limits.check_query(query) == query
    with pytest.raises(InvalidInput, match="character 4"):
        limits.check_query("caf\udce9")
