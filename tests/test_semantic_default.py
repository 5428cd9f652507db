"""Semantic search out of the box: every command that writes embeds what it stored (import,
fetch, snapshot import), with a bar on a terminal and a summary line elsewhere; `doctor` says
what is on; DK_MIRROR_SEMANTIC=off turns it off; Ctrl-C while embedding loses nothing.

The suite runs with the tier off (tests/conftest.py); these tests turn it on (`semantic_on`),
as a user's install has it.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli import progress
from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import ConfigError
from mirror.models import Document
from mirror.policy import Mode
from mirror.semantic import model
from mirror.service import Mirror, ranking
from mirror.store.store import Store
from tests.emulator_fixtures import corpus_documents
from tests.test_semantic import TAP, TAP_QUESTION, corpus

pytestmark = pytest.mark.skipif(
    not model.status().available, reason="the model's packages are not installed (pip install -e .)"
)
ROOT = Path(__file__).resolve().parents[1]


class _Terminal:
    """stderr as a terminal, for the bars (click's runner captures the real one)."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.shown.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def pages(count: int) -> list[Document]:
    """`count` real pages with content, the tap-delay page first."""
    docs = [d for d in corpus() if d.content]
    return [next(d for d in docs if d.name == TAP), *[d for d in docs if d.name != TAP]][:count]


def records(path: Path, docs: list[Document]) -> Path:
    """`docs` as an import file."""
    with gzip.open(path, "wt", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc.to_api()) + "\n")
    return path


def facts(db_url: str) -> tuple[str | None, int, int]:
    """(model the index is for, documents embedded, documents waiting)."""
    store = Store.open(db_url)
    try:
        found = store.semantic_facts(model.status().key)
    finally:
        store.close()
    return found.model, found.vectors, found.pending


def semantic_line(output: str) -> str:
    return next(line for line in output.splitlines() if "semantic" in line)


@pytest.mark.both_backends
def test_an_import_embeds_every_page_so_a_fresh_store_answers_questions(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    docs = pages(40)
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    imported = CliRunner().invoke(cli, ["import", str(records(tmp_path / "p.jsonl.gz", docs))])
    assert imported.exit_code == 0, imported.output
    # Off a terminal: no bar, one summary line.
    assert "embedded 40 document(s) for semantic search in " in imported.stderr
    # The import's report first, then what embedding it cost.
    assert imported.stderr.index("imported 40 documents") < imported.stderr.index("embedded 40")
    assert "\r" not in imported.stderr
    assert facts(db_url) == (model.status().key, 40, 0)  # no `dk-mirror index update`
    doctor = CliRunner().invoke(cli, ["doctor", "--offline"])
    line = semantic_line(doctor.stdout)
    assert line.split()[0] == "ok" and "on: all-MiniLM-L6-v2" in line, line
    assert "40 documents embedded" in line and "DK_MIRROR_SEMANTIC=off" in line
    with Mirror(Settings.resolve(offline=True)) as mirror:
        assert mirror.semantic_status().on
        found = mirror.search_documents(TAP_QUESTION, page_size=5, mode=Mode(offline=True))
        ctx = mirror._ctx()
        assert ranking.hybrid_ranking(ctx, TAP_QUESTION, limit=5) is not None  # fused
    assert TAP in [r.parent for r in found.page.results]


def test_an_import_draws_the_embedding_bar_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    screen = _Terminal()
    monkeypatch.setattr(progress, "_stderr", lambda: screen)
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "store.sqlite3"))
    file = records(tmp_path / "p.jsonl.gz", pages(70))
    imported = CliRunner().invoke(cli, ["import", str(file)])
    assert imported.exit_code == 0, imported.output
    drawn = "".join(screen.shown)
    assert "embedding" in drawn and "64/70" in drawn and "70/70" in drawn, drawn


def test_fetch_embeds_what_it_fetched(cli_online, db_url: str, semantic_on: None) -> None:  # type: ignore[no-untyped-def]
    # Pages the emulator serves (tests/emulator_fixtures.py: the tensorflow.org ones).
    names = [d["name"] for d in corpus_documents("tensorflow.org") if d.get("content")][:5]
    fetched = CliRunner().invoke(cli, ["fetch", *names])
    assert fetched.exit_code == 0, fetched.output
    assert "embedded 5 document(s) for semantic search" in fetched.stderr
    assert facts(db_url) == (model.status().key, 5, 0)


def test_a_snapshot_import_embeds_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    source = tmp_path / "source.sqlite3"
    monkeypatch.setenv("DK_MIRROR_DB", str(source))
    monkeypatch.setenv("DK_MIRROR_SEMANTIC", "off")
    file = records(tmp_path / "p.jsonl.gz", pages(12))
    assert CliRunner().invoke(cli, ["import", str(file)]).exit_code == 0
    snap = tmp_path / "docs.snap"
    exported = CliRunner().invoke(cli, ["snapshot", "export", str(snap)])
    assert exported.exit_code == 0, exported.output
    monkeypatch.delenv("DK_MIRROR_SEMANTIC")
    target = tmp_path / "target.sqlite3"
    monkeypatch.setenv("DK_MIRROR_DB", str(target))
    imported = CliRunner().invoke(cli, ["snapshot", "import", str(snap)])
    assert imported.exit_code == 0, imported.output
    assert "embedded 12 document(s) for semantic search" in imported.stderr
    assert facts(f"sqlite:///{target}") == (model.status().key, 12, 0)


def test_turned_off_nothing_is_embedded_search_ranks_by_words_and_doctor_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, semantic_on: None
) -> None:
    db = tmp_path / "store.sqlite3"
    monkeypatch.setenv("DK_MIRROR_DB", str(db))
    file = records(tmp_path / "p.jsonl.gz", pages(8))
    assert CliRunner().invoke(cli, ["import", str(file)]).exit_code == 0  # on: embedded
    monkeypatch.setenv("DK_MIRROR_SEMANTIC", "off")
    more = records(tmp_path / "more.jsonl.gz", pages(11)[8:])
    imported = CliRunner().invoke(cli, ["import", str(more)])
    assert imported.exit_code == 0, imported.output
    assert "embedded" not in imported.stderr
    assert facts(f"sqlite:///{db}") == (model.status().key, 8, 3)  # the new pages wait
    doctor = CliRunner().invoke(cli, ["doctor", "--offline"])
    line = semantic_line(doctor.stdout)
    assert line.split()[0] == "ok" and "off: turned off by DK_MIRROR_SEMANTIC=off" in line
    assert "unset it to turn it on" in line
    # Turned on again, only what was written meanwhile is embedded (below: 3, and 1 new).
    assert "(8 documents keep their vectors; the next write" in line, line
    assert "embeds the 3 without one)" in line, line
    refused = CliRunner().invoke(cli, ["index", "update"])
    assert refused.exit_code != 0 and "DK_MIRROR_SEMANTIC=off" in refused.output
    # The stored vectors are not used, and the model is never loaded for a search.
    monkeypatch.setattr(model, "_shared", None)
    with Mirror(Settings.resolve(offline=True)) as mirror:
        assert not mirror.semantic_status().on
        found = mirror.search_documents(TAP_QUESTION, page_size=5, mode=Mode(offline=True))
        assert ranking.hybrid_ranking(mirror._ctx(), TAP_QUESTION, limit=5) is None
    assert found.page.results
    assert model._shared is None or not model._shared.ready
    # Turned on again, the next write embeds what waited.
    monkeypatch.delenv("DK_MIRROR_SEMANTIC")
    again = CliRunner().invoke(cli, ["import", str(records(tmp_path / "x.jsonl.gz", pages(12)))])
    assert "embedded 4 document(s)" in again.stderr, again.output
    assert facts(f"sqlite:///{db}") == (model.status().key, 12, 0)


@pytest.mark.parametrize("value", ["off", "0", "no", "false", "on", "1", ""])
def test_the_switch_reads_the_usual_words(value: str) -> None:
    expected = value.lower() not in {"off", "0", "no", "false"}
    assert (
        Settings.resolve({"DK_MIRROR_SEMANTIC": value, "DK_MIRROR_HOME": "/x"}).semantic is expected
    )


def test_a_switch_that_is_neither_on_nor_off_is_refused() -> None:
    with pytest.raises(ConfigError, match="DK_MIRROR_SEMANTIC='maybe' is neither on nor off"):
        Settings.resolve({"DK_MIRROR_SEMANTIC": "maybe", "DK_MIRROR_HOME": "/x"})


def _interruptible() -> None:
    # A test run started in the background inherits SIGINT ignored; give the child the
    # default a user's terminal gives it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_at_the_second_batch(
    tmp_path: Path, env: dict[str, str], command: list[str]
) -> str:
    """Run the real `dk-mirror COMMAND` in a real process, its second batch of embeddings held
    until a Ctrl-C lands (so it lands mid-embedding on any machine, the first batch's vectors
    written); its stderr, once it exited 130 without a traceback."""
    marker = tmp_path / "second-batch"
    code = (
        "import sys, time\n"
        "from mirror.semantic import model\n"
        "real = model.Embedder.embed\n"
        "calls = []\n"
        "def embed(self, texts):\n"
        "    calls.append(len(texts))\n"
        "    if len(calls) == 2:\n"
        f"        open({str(marker)!r}, 'w').close()\n"
        "        time.sleep(120)\n"
        "    return real(self, texts)\n"
        "model.Embedder.embed = embed\n"
        "from mirror.cli.main import main\n"
        f"sys.argv = ['dk-mirror', *{command!r}]\n"
        "main()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "never reached the second batch"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    return stderr


@pytest.mark.slow
def test_ctrl_c_while_embedding_keeps_every_document_and_says_how_it_resumes(
    tmp_path: Path, semantic_on: None
) -> None:
    docs = pages(130)  # three batches of EMBED_BATCH (64)
    file = records(tmp_path / "p.jsonl.gz", docs)
    db = tmp_path / "store.sqlite3"
    env = {**os.environ, "DK_MIRROR_DB": str(db)}
    stderr = _interrupted_at_the_second_batch(tmp_path, env, ["import", str(file)])
    assert (
        "interrupted while embedding: every document written is saved; 66 wait for a vector"
        in stderr
    ), stderr
    assert "`dk-mirror index update`, or the next write, embeds them" in stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 130
    url = f"sqlite:///{db}"
    assert facts(url) == (model.status().key, 64, 66)
    # The next write resumes it: its own page and every one that waited.
    extra = [d for d in corpus() if d.content and d.name not in {p.name for p in docs}][:1]
    resumed = subprocess.run(
        [sys.executable, "-m", "mirror", "import", str(records(tmp_path / "one.jsonl.gz", extra))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "embedded 67 document(s) for semantic search" in resumed.stderr
    assert facts(url) == (model.status().key, 131, 0)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["index", "update"], ["index", "rebuild", "--semantic"]])
def test_ctrl_c_while_the_index_command_embeds_says_what_waits_and_how_it_resumes(
    tmp_path: Path, semantic_on: None, command: list[str]
) -> None:
    db = tmp_path / "store.sqlite3"
    env = {**os.environ, "DK_MIRROR_DB": str(db)}
    file = records(tmp_path / "p.jsonl.gz", pages(130))  # three batches of EMBED_BATCH (64)
    stored = subprocess.run(
        [sys.executable, "-m", "mirror", "import", str(file)],
        cwd=ROOT,
        env={**env, "DK_MIRROR_SEMANTIC": "off"},  # stored, nothing embedded
        capture_output=True,
        text=True,
        check=False,
    )
    assert stored.returncode == 0, stored.stderr
    stderr = _interrupted_at_the_second_batch(tmp_path, env, command)
    assert "interrupted while embedding" in stderr and "66 wait for a vector" in stderr, stderr
    assert "`dk-mirror index update`, or the next write, embeds them" in stderr
    assert facts(f"sqlite:///{db}") == (model.status().key, 64, 66)
