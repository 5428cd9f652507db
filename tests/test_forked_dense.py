"""A cold search's dense ranking in a forked helper (service/forked_dense.py, cli/start.py):
it ranks as the search does in one process, a helper that fails or hangs leaves the search
to words with a warning, and no helper outlives its command (Ctrl-C, a usage error)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror.cli import start
from mirror.config import ENV_MODEL_CACHE, Settings
from mirror.policy import Mode
from mirror.records import read_sample
from mirror.semantic import model
from mirror.service import Mirror, forked_dense, semantic
from mirror.store.store import Store
from tests.user_env import user_env

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or not model.status().available,
        reason="the helper is forked on POSIX (the processes are listed from Linux's /proc), "
        "and needs the semantic extra",
    ),
    pytest.mark.slow,  # every test runs dk-mirror in processes of its own
]
QUESTION = "how do I keep the model files from downloading again"
OFFLINE = Mode(offline=True)
Ranked = list[tuple[str, str, float]]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The sample, every page embedded (built once: embedding costs seconds)."""
    path = tmp_path_factory.mktemp("embedded") / "store.sqlite3"
    store = Store.open(f"sqlite:///{path}")
    try:
        store.put(list(read_sample()), fetched_at=1.0, upstream="sample")
        assert semantic.build(store, model.status()) > 0
    finally:
        store.close()
    yield path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A command's environment: its own home, nothing of the caller's but the test worker's
    prepared model (tests/conftest.py: preparing it per test cost minutes)."""
    return user_env(DK_MIRROR_HOME=str(tmp_path / "home"))


def _in_process(path: Path, *, semantic_on: bool = True) -> Ranked:
    settings = Settings(db_url=f"sqlite:///{path}", offline=True, semantic=semantic_on)
    with Mirror(settings, reader=True) as mirror:
        page = mirror.search_documents(QUESTION, page_size=10, mode=OFFLINE).page
    return [(r.parent, r.id, r.relevance_score or 0.0) for r in page.results]


# Runs the command as `python -m mirror` does, then says which of the model's modules this
# process (not the helper) imported.
PROBE = (
    "import runpy, sys\nsys.argv = ['dk-mirror', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    "print(sorted({'numpy', 'onnxruntime', 'tokenizers'} & set(sys.modules)), file=sys.stderr)"
)


def _probed(path: Path, env: dict[str, str], *args: str) -> tuple[Any, str]:
    """`dk-mirror --offline ARGS` run by PROBE in a new process on the store at `path`: its
    JSON output, and its stderr (ending with the model's modules it imported)."""
    run = subprocess.run(
        [sys.executable, "-c", PROBE, "--offline", *args],
        env={**env, "DK_MIRROR_DB": f"sqlite:///{path}"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), run.stderr


def _cold_search(path: Path, env: dict[str, str]) -> tuple[Ranked, str]:
    found, stderr = _probed(path, env, "search", "--json", "--limit", "10", QUESTION)
    return [(r["parent"], r["id"], r["relevanceScore"]) for r in found["results"]], stderr


def _same(cold: Ranked, warm: Ranked) -> bool:
    return [c[:2] for c in cold] == [w[:2] for w in warm] and all(
        c[2] == pytest.approx(w[2], abs=1e-6) for c, w in zip(cold, warm, strict=True)
    )


def test_a_cold_search_ranks_as_one_process_does_without_loading_the_model(
    embedded: Path, env: dict[str, str], tmp_path: Path
) -> None:
    hybrid, words = _in_process(embedded), _in_process(embedded, semantic_on=False)
    assert not _same(hybrid, words)  # the vectors change this ranking: the test can tell
    env = {**env, ENV_MODEL_CACHE: str(tmp_path / "models")}  # none prepared yet
    for _ in range(2):  # the first prepares the model's cache, the second loads it
        cold, stderr = _cold_search(embedded, env)
        assert _same(cold, hybrid), (cold, hybrid)
        # The model ran in the helper: this process never imported it.
        assert stderr.strip().splitlines()[-1] == "[]", stderr
        assert "semantic search failed" not in stderr


def _answered_in_process(path: Path, *, semantic_on: bool = True) -> tuple[str, list[str]]:
    settings = Settings(db_url=f"sqlite:///{path}", offline=True, semantic=semantic_on)
    with Mirror(settings, reader=True) as mirror:
        found = mirror.answer_query(QUESTION, mode=OFFLINE).answer
    return found.answer_text, [r.parent for r in found.references]


def _cold_answer(path: Path, env: dict[str, str]) -> tuple[tuple[str, list[str]], str]:
    body, stderr = _probed(path, env, "answer", "--json", QUESTION)
    found = body["answer"]
    cited = [r["documentReference"]["documentChunk"]["parent"] for r in found["references"]]
    return (found["answerText"], cited), stderr


def test_a_cold_offline_answer_quotes_as_one_process_does_without_loading_the_model(
    embedded: Path, env: dict[str, str]
) -> None:
    # The extractive answer quotes `search --offline`'s ranking: a cold one ranks it with the
    # helper, so the command never imports the model and cites what one process cites.
    hybrid = _answered_in_process(embedded)
    assert hybrid != _answered_in_process(embedded, semantic_on=False)  # the test can tell
    cold, stderr = _cold_answer(embedded, env)
    assert cold == hybrid
    assert stderr.strip().splitlines()[-1] == "[]", stderr
    assert "semantic search failed" not in stderr


def _damaged(embedded: Path, tmp_path: Path) -> Path:
    damaged = tmp_path / "damaged.sqlite3"
    with sqlite3.connect(embedded) as source, sqlite3.connect(damaged) as copy:
        source.backup(copy)
    with sqlite3.connect(damaged) as conn:  # one vector cut short: the matrix cannot be built
        conn.execute("UPDATE doc_vectors SET vector = x'0102' WHERE rowid = 1")
    conn.close()
    return damaged


def test_a_helper_that_fails_leaves_the_search_to_words_and_says_why(
    embedded: Path, env: dict[str, str], tmp_path: Path
) -> None:
    cold, stderr = _cold_search(_damaged(embedded, tmp_path), env)
    assert "semantic search failed (ValueError: " in stderr
    assert "): ranked by words only" in stderr
    assert "Traceback" not in stderr
    assert _same(cold, _in_process(embedded, semantic_on=False))


def test_a_helper_that_fails_leaves_the_answer_to_words_and_says_why(
    embedded: Path, env: dict[str, str], tmp_path: Path
) -> None:
    cold, stderr = _cold_answer(_damaged(embedded, tmp_path), env)
    assert "semantic search failed (ValueError: " in stderr
    assert "Traceback" not in stderr
    assert cold == _answered_in_process(embedded, semantic_on=False)


@pytest.fixture
def silent() -> Iterator[forked_dense.Helper]:
    """A process that never answers (as a hung helper), as the command holds a helper: its
    pid and the two pipes' ends a helper is given, the other ends held open by it."""
    request_read, request_write = os.pipe()
    answer_read, answer_write = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        pass_fds=(request_read, answer_write),
    )
    os.close(request_read)
    os.close(answer_write)
    yield forked_dense.Helper(process.pid, request_write, answer_read)
    if process.poll() is None:
        process.kill()
        process.wait()


def test_a_helper_that_does_not_answer_in_time_is_killed_and_the_search_ranks_by_words(
    embedded: Path,
    silent: forked_dense.Helper,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(forked_dense, "WAIT_SECONDS", 0.5)
    settings = Settings(db_url=f"sqlite:///{embedded}", offline=True)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING), Mirror(settings, reader=True) as mirror:
        assert mirror.warm_search(QUESTION, page_size=10, mode=OFFLINE, helper=silent)
        page = mirror.search_documents(QUESTION, page_size=10, mode=OFFLINE).page
    assert time.monotonic() - started < 30
    ranked = [(r.parent, r.id, r.relevance_score or 0.0) for r in page.results]
    assert _same(ranked, _in_process(embedded, semantic_on=False))
    assert "semantic search failed (no answer within 0.5 s): ranked by words only" in caplog.text
    assert not _running(silent.pid)  # killed and reaped


def _running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _session(sid: int) -> list[int]:
    """The live processes of session `sid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def _opened(pid: int, path: Path) -> bool:
    """Whether process `pid` has the file at `path` open."""
    try:
        fds = list(Path(f"/proc/{pid}/fd").iterdir())
    except FileNotFoundError:
        return False
    for fd in fds:
        try:
            if Path(os.readlink(fd)) == path:
                return True
        except OSError:
            continue
    return False


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(p) for p in text.split()]


def _searching(embedded: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], list[int]]:
    """A cold `search --offline` in its own process group (as a terminal's foreground job),
    once it has the store open: it is searching (its Ctrl-C handler is set) and its helper
    is loading the model or ranking; and the helper's pid."""
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "--offline", "search", QUESTION],
        env={**env, "DK_MIRROR_DB": f"sqlite:///{embedded}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not _opened(process.pid, embedded) and time.monotonic() < deadline:
        time.sleep(0.002)
    helpers = _children(process.pid)
    assert helpers, "no helper was forked"
    return process, helpers


def test_ctrl_c_during_a_cold_search_leaves_no_process_and_no_traceback(
    embedded: Path, env: dict[str, str]
) -> None:
    process, helpers = _searching(embedded, env)
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert stderr.count("stopping...") <= 1, stderr  # the helper never ran the CLI's handler
    assert _session(process.pid) == []
    assert not any(_running(pid) for pid in helpers)


def test_a_command_stopped_alone_reaps_its_helper_before_it_exits(
    embedded: Path, env: dict[str, str]
) -> None:
    # SIGINT to the command only (a supervisor's `kill -INT`, not a terminal's Ctrl-C to the
    # group): the helper gets no signal of its own, and is gone when the command has exited,
    # not a moment later when the kernel delivers its parent-death signal.
    process, helpers = _searching(embedded, env)
    os.kill(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert _session(process.pid) == []
    assert not any(_running(pid) for pid in helpers)


def test_a_command_that_ignores_ctrl_c_keeps_its_helper_through_one(
    embedded: Path, env: dict[str, str]
) -> None:
    # Started as `nohup` or a script's `cmd &` starts it: SIGINT ignored from the start. A
    # Ctrl-C to the group then changes nothing: the helper ignores it too, and the search
    # ranks with its vectors as usual.
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "--offline", "search", QUESTION],
        env={**env, "DK_MIRROR_DB": f"sqlite:///{embedded}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    deadline = time.monotonic() + 60
    while not _children(process.pid) and time.monotonic() < deadline:
        time.sleep(0.002)
    assert _children(process.pid), "no helper was forked"
    os.killpg(process.pid, signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "semantic search failed" not in stderr, stderr
    assert "1. " in stdout


def test_a_helper_no_search_takes_is_gone_when_the_command_ends(
    embedded: Path, env: dict[str, str]
) -> None:
    # Looks like an offline search, and is a usage error: the search never starts.
    process = subprocess.Popen(
        [sys.executable, "-m", "mirror", "--offline", "search", "--limit", "0", QUESTION],
        env={**env, "DK_MIRROR_DB": f"sqlite:///{embedded}"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 2, stderr
    assert _session(process.pid) == []


@pytest.mark.parametrize(
    ("args", "environ", "expected"),
    [
        (["--offline", "search", "q"], {}, True),
        (["search", "q"], {"DK_MIRROR_OFFLINE": "1"}, True),
        (["--strict-offline", "search", "q"], {}, True),
        (["search", "q"], {}, False),  # online: upstream answers
        (["--offline", "search", "q"], {"DK_MIRROR_SEMANTIC": "off"}, False),
        (["--offline", "search", "--fetch", "q"], {}, False),
        (["--offline", "search", "--as-of", "2025-01-01", "q"], {}, False),
        (["--offline", "search", "--help"], {}, False),
        (["--offline", "get", "documents/x"], {}, False),
        (["--offline", "answer", "q"], {}, True),  # it quotes search --offline's ranking
        (["answer", "q"], {}, False),  # online: upstream answers
    ],
)
def test_which_command_lines_fork_a_helper(
    args: list[str], environ: dict[str, str], expected: bool
) -> None:
    assert start._may_rank_with_vectors(args, environ) is expected


# The real entry point, its helper's ranking held up until the test lets the Ctrl-C land: the
# helper says when it has the question, so the command is waiting for its answer by then.
SLOW_HELPER = (
    "import os, sys, time\n"
    "from mirror.service import forked_dense\n"
    "def _rank(*args):\n"
    "    open(os.environ['ASKED'], 'w').close()\n"
    "    time.sleep(60)\n"
    "forked_dense._rank = _rank\n"
    "from mirror.cli.start import main\n"
    "sys.argv = ['dk-mirror', *sys.argv[1:]]\n"
    "main()\n"
)


@pytest.mark.parametrize("command", ["search", "answer"])
def test_ctrl_c_while_a_cold_search_waits_for_its_helper_exits_130_without_a_traceback(
    embedded: Path, env: dict[str, str], tmp_path: Path, command: str
) -> None:
    asked = tmp_path / "asked"
    process = subprocess.Popen(
        [sys.executable, "-c", SLOW_HELPER, "--offline", command, QUESTION],
        env={**env, "DK_MIRROR_DB": f"sqlite:///{embedded}", "ASKED": str(asked)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not asked.exists() and time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    helpers = _children(process.pid)
    assert asked.exists() and helpers, "the helper was never asked"
    time.sleep(0.5)  # the command has ranked by words (milliseconds) and waits for the helper
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert process.returncode == 130, stderr
    assert stderr.rstrip().endswith("interrupted"), stderr
    assert _session(process.pid) == []
