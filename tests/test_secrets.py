"""A canary API key never appears in the store, logs, error messages, output or URLs."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from tests.conftest import CANARY_KEY
from tests.emulator import Fault

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

TF = ["documents/www.tensorflow.org/hub/caching", "documents/www.tensorflow.org/hub/installation"]


def test_canary_key_never_leaks(emulator, tmp_path: Path, monkeypatch, caplog):
    db = tmp_path / "canary.sqlite3"
    emulator.api_key = CANARY_KEY
    monkeypatch.setenv("DK_MIRROR_DB", str(db))
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url)
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", CANARY_KEY)
    # Waits would make this slow; the retry path itself must still run and log.
    monkeypatch.setattr("mirror.interrupts.sleep", lambda _s: None)
    caplog.set_level(logging.DEBUG)
    runner = CliRunner()
    outputs = []

    def run(*args: str) -> None:
        result = runner.invoke(cli, list(args))
        outputs.append(result.stdout + result.stderr + repr(result.exception))

    run("get", TF[0])  # success
    run("--transport", "mcp", "get", TF[1])  # success over MCP
    emulator.inject(Fault(kind="status", status=503, retry_after="0"), times=2)
    run("get", "--refresh", TF[0])  # retried
    run("get", "documents/www.tensorflow.org/ghost")  # not found
    emulator.api_key = "another-key"
    run("get", "--refresh", TF[0])  # key rejected
    run("--transport", "mcp", "get", "--refresh", TF[1])  # key rejected over MCP
    emulator.api_key = CANARY_KEY
    emulator.api_disabled = True
    run("get", "--refresh", TF[0])  # API disabled
    run("doctor")
    run("status", "--json")

    assert emulator.count() >= 8
    assert any("rejected" in o or "not valid" in o for o in outputs)
    for text in outputs:
        assert CANARY_KEY not in text
    for record in caplog.records:
        assert CANARY_KEY not in record.getMessage()
    for request in emulator.requests:
        assert CANARY_KEY not in request.path and CANARY_KEY not in str(request.query)
    assert any(r.headers.get("x-goog-api-key") == CANARY_KEY for r in emulator.requests)
    for path in tmp_path.glob("canary.sqlite3*"):
        # The store, its WAL and the files of its search index's folder.
        for file in [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]:
            assert CANARY_KEY.encode() not in file.read_bytes()


def test_settings_repr_hides_the_key():
    from mirror.config import Settings

    settings = Settings.resolve(
        {"DEVELOPER_KNOWLEDGE_API_KEY": CANARY_KEY, "DK_MIRROR_HOME": "/tmp/x"}
    )
    assert CANARY_KEY not in repr(settings)


@pytest.mark.parametrize("transport", ["rest", "mcp"])
def test_a_rejected_key_is_not_quoted_in_the_error(make_mirror, emulator, transport):
    from mirror.errors import UpstreamError

    mirror = make_mirror(api_key=CANARY_KEY, transport=transport)
    with pytest.raises(UpstreamError) as caught:
        mirror.get_documents(TF[:1])
    assert CANARY_KEY not in str(caught.value)
