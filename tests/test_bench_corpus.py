"""bench/ finds the larger corpus by --corpus, DK_MIRROR_CORPUS_DIR or ../shared/corpus, and
says what is missing and how to point at it when it is absent (no traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import common

ROOT = Path(__file__).resolve().parents[1]
EN = "developer.chrome.com-en.jsonl.gz"


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / EN).write_bytes(b"")
    return path


def test_the_option_beats_the_variable_which_beats_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    option, variable = _folder(tmp_path / "option"), _folder(tmp_path / "variable")
    default = _folder(tmp_path / "shared" / "corpus")
    monkeypatch.setattr(common, "ROOT", tmp_path / "src")
    monkeypatch.delenv(common.CORPUS_ENV, raising=False)
    assert common.english_corpus() == default / EN
    monkeypatch.setenv(common.CORPUS_ENV, str(variable))
    assert common.english_corpus() == variable / EN
    assert common.english_corpus(str(option)) == option / EN


@pytest.mark.parametrize(
    ("option", "variable", "named"),
    [
        (True, False, "--corpus"),
        (False, True, "$DK_MIRROR_CORPUS_DIR"),
        (False, False, "the default, beside the checkout"),
    ],
)
def test_a_missing_corpus_says_where_it_looked_and_how_to_point_at_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: bool, variable: bool, named: str
) -> None:
    nowhere = tmp_path / "nowhere"
    monkeypatch.setattr(common, "ROOT", tmp_path / "src")
    monkeypatch.delenv(common.CORPUS_ENV, raising=False)
    if variable:
        monkeypatch.setenv(common.CORPUS_ENV, str(nowhere))
    with pytest.raises(SystemExit) as exit_:
        common.english_corpus(str(nowhere) if option else None)
    message = str(exit_.value.code)
    assert EN in message and named in message
    assert str(nowhere if option or variable else tmp_path / "shared" / "corpus") in message
    assert "--corpus DIR" in message and "DK_MIRROR_CORPUS_DIR=DIR" in message


# Every bench that reads the corpus, found by the option it adds (a list written by hand
# missed the crawl, scale and shard benches as they were added).
CORPUS_BENCHES = sorted(
    path.stem
    for path in (ROOT / "bench").glob("bench_*.py")
    if "add_corpus_option(" in path.read_text(encoding="utf-8")
)


def test_the_corpus_benches_are_found() -> None:
    assert {"bench_crawl", "bench_import", "bench_scale", "bench_search"} <= set(CORPUS_BENCHES)


@pytest.mark.slow
@pytest.mark.parametrize("script", CORPUS_BENCHES)
def test_every_corpus_bench_takes_the_option_and_exits_cleanly(tmp_path: Path, script: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DK_MIRROR_HOME": str(tmp_path / "home")}
    env.pop(common.CORPUS_ENV, None)
    missing = tmp_path / "no-corpus"
    run = subprocess.run(
        [sys.executable, "-m", f"bench.{script}", "--corpus", str(missing)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    assert f"not found in {missing} (--corpus)" in run.stderr
