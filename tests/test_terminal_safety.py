"""Stored text never drives the terminal: control characters are printed as escapes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mirror.cli import render
from mirror.models import Document
from mirror.store.store import Store

# As a store filled by an older dk-mirror (whose snapshot import took any name) may hold them.
EVIL_NAME = "documents/evil.example/\x1b]0;owned\x07page"
EVIL_TITLE = "Title \x1b[2J\x1b[31mred\u202eesrever\x9b1m"
EVIL_SOURCE = "evil\x1b[5m.example"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


@pytest.mark.parametrize(
    ("text", "line", "multiline"),
    [
        ("plain é ✓ text", "plain é ✓ text", "plain é ✓ text"),
        ("a\x1b[31mb", "a\\x1b[31mb", "a\\x1b[31mb"),
        ("tab\tnew\nline\r", "tab\\x09new\\x0aline\\x0d", "tab\tnew\nline\\x0d"),
        ("csi\x9b2J del\x7f", "csi\\x9b2J del\\x7f", "csi\\x9b2J del\\x7f"),
        ("bidi\u202eevil\u2066x", "bidi\\u202eevil\\u2066x", "bidi\\u202eevil\\u2066x"),
        ("rtl mark \u200f kept", "rtl mark \u200f kept", "rtl mark \u200f kept"),
    ],
)
def test_clean(text: str, line: str, multiline: str) -> None:
    assert render.clean(text) == line
    assert render.clean(text, multiline=True) == multiline


def test_json_output_escapes_what_json_dumps_leaves_raw() -> None:
    data = {"t": EVIL_TITLE, "backslash": "\\\x9b"}
    for text in (render.to_json(data), render.to_json_line(data)):
        assert not any(c in text for c in RAW)
        assert json.loads(text) == data


@pytest.fixture
def evil_store(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    store = Store.open(db_url)
    try:
        docs = [
            Document(EVIL_NAME, content="# Walrus \x1b[2J facts\n", title=EVIL_TITLE,
                     data_source=EVIL_SOURCE),
            Document("documents/good.example/walrus", content="# Walrus care\n", title="Walrus"),
        ]  # fmt: skip
        store.put(docs, fetched_at=0.0, upstream="old")
    finally:
        store.close()
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")
    return db_url


def run(*args: str) -> Result:
    from mirror.cli.main import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.mark.parametrize(
    "args",
    [("ls",), ("ls", "--json"), ("status",), ("status", "--json"), ("search", "walrus")],
)
def test_listing_commands_escape_stored_text(evil_store: str, args: tuple[str, ...]) -> None:
    result = run(*args)
    assert result.exit_code == 0
    assert not any(c in result.output for c in RAW), result.output
    assert "owned" in result.output or "evil" in result.output


def test_ls_shows_the_escapes(evil_store: str) -> None:
    out = run("ls").stdout
    assert "documents/evil.example/\\x1b]0;owned\\x07page" in out
    assert "Title \\x1b[2J\\x1b[31mred\\u202eesrever\\x9b1m" in out


@pytest.mark.slow
def test_get_is_byte_exact_when_piped_and_escaped_on_a_terminal(
    evil_store: str, tmp_path: Path
) -> None:
    name = "documents/evil.example/\x1b]0;owned\x07page"
    piped = subprocess.run(
        [sys.executable, "-m", "mirror", "get", "--offline", "documents/good.example/walrus"],
        capture_output=True,
    )
    assert piped.stdout == b"# Walrus care\n"
    # The evil document cannot even be asked for: its name is not a valid name.
    refused = subprocess.run([sys.executable, "-m", "mirror", "get", name], capture_output=True)
    assert refused.returncode == 2 and b"\x1b" not in refused.stderr
    # A page whose content holds escapes, read on a terminal (a pty).
    store = Store.open(evil_store)
    try:
        store.put([Document("documents/good.example/esc", content="a\x1b[2Jb\n")],
                  fetched_at=0.0, upstream="old")  # fmt: skip
    finally:
        store.close()
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mirror", "get", "--offline", "documents/good.example/esc"],
            stdout=follower,
            stderr=subprocess.PIPE,
        )
        assert done.returncode == 0, done.stderr
        shown = os.read(leader, 4096)
    finally:
        os.close(leader)
        os.close(follower)
    assert b"\x1b" not in shown and b"a\\x1b[2Jb" in shown
