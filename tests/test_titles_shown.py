"""Titles as people see them: the CLI's search and answer, and the browser's search, page,
folder, tree and type-ahead show a stored title as text. Real corpus titles hold character
references (`Chrome&nbsp;119`) and Markdown's backticks (`the CSS `@scope` at-rule`), and
name elements (`not just <video>`): the first two are not shown, the last is. `--json` keeps
the title as upstream gave it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.testclient import TestClient

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.models import Document
from mirror.serve.web.routes import WebOptions, web_routes
from mirror.service import Mirror
from tests.cli_store import stored_for_cli

SOURCE = "developer.chrome.com"
# Titles as the corpus stores them (the last as the full corpus, not the tests subset, has it).
WEBGPU = "What's New in WebGPU (Chrome&nbsp;119)"
SCOPE = "Limit the reach of your selectors with the CSS `@scope` at-rule"
PIP = "Picture-in-Picture for any Element, not just <video>"


def _doc(path: str, title: str, content: str) -> Document:
    return Document(
        name=f"documents/{SOURCE}/blog/{path}",
        uri=f"https://{SOURCE}/blog/{path}",
        content=content,
        description="",
        data_source=SOURCE,
        title=title,
    )


DOCS = [
    _doc("new-in-webgpu-119", WEBGPU, "WebGPU adds filterable float32 textures in Chrome 119."),
    _doc("at-scope", SCOPE, "The scope at-rule limits the reach of selectors to a subtree."),
    _doc("pip", PIP, "Picture-in-Picture now shows any element, a video or a whole page."),
]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return stored_for_cli(tmp_path, monkeypatch, DOCS)


@pytest.mark.parametrize(
    ("query", "shown", "not_shown"),
    [
        ("filterable float32 textures", "What's New in WebGPU (Chrome 119)", "&nbsp;"),
        ("scope at-rule selectors", "with the CSS @scope at-rule", "`"),
        ("picture-in-picture any element", "not just <video>", None),
    ],
)
def test_the_cli_shows_titles_as_text(
    db: Path, query: str, shown: str, not_shown: str | None
) -> None:
    searched = CliRunner().invoke(cli, ["search", "--offline", query])
    answered = CliRunner().invoke(cli, ["answer", "--offline", query])
    assert searched.exit_code == 0 and answered.exit_code == 0, searched.output + answered.output
    first = searched.stdout.splitlines()[0]
    reference = answered.stdout.split("References:")[1].splitlines()[1]
    for line in (first, reference):
        assert line.endswith(shown), line
        assert not_shown is None or not_shown not in line, line
    # --json: the title as stored, for programs.
    raw = CliRunner().invoke(cli, ["search", "--offline", "--json", query])
    titles = [r["document"]["title"] for r in json.loads(raw.stdout)["results"]]
    assert titles[0] in (WEBGPU, SCOPE, PIP)


def test_the_browser_shows_titles_as_text(db: Path) -> None:
    with Mirror(Settings.resolve(offline=True)) as mirror:
        client = TestClient(Starlette(routes=web_routes(mirror, WebOptions())))
        found = client.get("/search", params={"q": "filterable float32 textures"}).text
        assert "WebGPU (Chrome 119)</a>" in found and "nbsp" not in found
        page = client.get(f"/doc/{SOURCE}/blog/at-scope").text
        assert (
            '<h1 class="doc-title">Limit the reach of your selectors with the CSS @scope at-rule</h1>'
            in page
        )
        assert "`@scope`" not in page
        folder = client.get(f"/browse/{SOURCE}/blog/").text
        assert "not just &lt;video&gt;</a>" in folder and "nbsp" not in folder
        mirror.outline(wait=True)  # the tree and type-ahead read the outline
        typed = client.get("/typeahead", params={"q": "picture-in-picture for"}).json()
        assert "Picture-in-Picture for any Element, not just <video>" in [
            r["label"] for r in typed["results"]
        ], typed


def test_ls_shows_titles_as_text(db: Path) -> None:
    listed = CliRunner().invoke(cli, ["ls"])
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert rows[f"documents/{SOURCE}/blog/new-in-webgpu-119"].endswith(
        "What's New in WebGPU (Chrome 119)"
    )
    assert rows[f"documents/{SOURCE}/blog/at-scope"].endswith("with the CSS @scope at-rule")
    assert rows[f"documents/{SOURCE}/blog/pip"].endswith("not just <video>")
    # --json: the title as stored, for programs.
    raw = [
        json.loads(line) for line in CliRunner().invoke(cli, ["ls", "--json"]).stdout.splitlines()
    ]
    assert {r["title"] for r in raw} == {WEBGPU, SCOPE, PIP}
