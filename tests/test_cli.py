"""The dk-mirror command: wiring, output shapes and exit codes (behaviour is tested on Mirror)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from mirror.store.schema.tables import SCHEMA_REVISION

# One emulator for the module, restored before each test (tests/emulator_fixtures.py).
pytestmark = pytest.mark.shared_emulator

TF = "documents/www.tensorflow.org/hub/caching"
TF2 = "documents/www.tensorflow.org/hub/installation"


@pytest.fixture
def run(cli_online):  # type: ignore[no-untyped-def]
    """The CLI against the emulator and the test's store (tests/conftest.py)."""
    return cli_online


def test_get_prints_markdown_then_serves_from_cache(run, emulator):
    first = run("get", "https://www.tensorflow.org/hub/caching")
    assert first.exit_code == 0
    assert first.stdout.lstrip().startswith("# Caching model downloads")
    emulator.reset()
    again = run("get", TF, "--offline")
    assert again.exit_code == 0 and again.stdout == first.stdout
    assert emulator.count() == 0


def test_get_json_is_the_batchget_shape_with_extras_apart(run):
    result = run("get", "--json", TF, TF2)
    data = json.loads(result.stdout)
    assert list(data) == ["documents", "_mirror"]
    assert [d["name"] for d in data["documents"]] == [TF, TF2]
    assert {"name", "uri", "content", "dataSource", "title"} <= set(data["documents"][0])
    assert [s["source"] for s in data["_mirror"]["served"]] == ["upstream", "upstream"]


def test_global_options_before_or_after_the_subcommand(run, emulator):
    run("get", TF)
    emulator.reset()
    before = run("--offline", "get", TF)
    after = run("get", TF, "--offline")
    assert before.exit_code == after.exit_code == 0
    assert before.stdout == after.stdout
    missing = run("--offline", "get", TF2)
    assert missing.exit_code == 4
    assert "dk-mirror fetch" in missing.stderr
    assert emulator.count() == 0


def test_exit_codes_for_bad_names_and_unknown_documents(run):
    bad = run("get", "not a name")
    assert bad.exit_code == 2 and "error:" in bad.stderr
    unknown = run("get", "documents/www.tensorflow.org/nope")
    assert unknown.exit_code == 3 and "not found upstream" in unknown.stderr


def test_fetch_names_file_summary_and_missing(run, tmp_path: Path):
    names = tmp_path / "names.txt"
    text = f"{TF}\n# docs we need\nwww.tensorflow.org/hub/installation\nwww.tensorflow.org/ghost\n"
    # As an editor on Windows saves it: a byte-order mark before the first name, CRLF ends.
    names.write_bytes(("\ufeff" + text.replace("\n", "\r\n")).encode("utf-8"))
    result = run("fetch", "--names-file", str(names), "--json")
    assert result.exit_code == 3
    summary = json.loads(result.stdout)
    assert summary["fetched"] == 2 and summary["missing"] == ["documents/www.tensorflow.org/ghost"]
    assert summary["failed"] == [] and summary["error"] is None
    again = run("fetch", "--names-file", str(names))
    assert "2 already cached" in again.stderr


def test_ls_status_doctor(run):
    run("fetch", TF, TF2)
    listing = run("ls", "--prefix", "www.tensorflow.org/hub/")
    assert [line.split()[0] for line in listing.stdout.splitlines()] == [TF, TF2]
    rows = [json.loads(line) for line in run("ls", "--json").stdout.splitlines()]
    assert [r["name"] for r in rows] == [TF, TF2] and rows[0]["hasContent"] is True
    status = json.loads(run("status", "--json").stdout)
    assert status["documents"] == 2 and status["byDataSource"] == {"www.tensorflow.org": 2}
    assert status["schemaRevision"] == SCHEMA_REVISION
    doctor = run("doctor")
    assert (
        doctor.exit_code == 0 and "quick_check ok" in doctor.stdout and "SQLite 3." in doctor.stdout
    )


def _write_gz(path: Path, lines: list[str]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write("".join(lines))


def _stored_count(run) -> int:  # type: ignore[no-untyped-def]
    status = run("status", "--json")
    if "no store at" in status.stderr:
        return 0
    return int(json.loads(status.stdout)["documents"])


def test_import_is_all_or_nothing(run, tmp_path: Path):
    good = {
        "name": TF,
        "uri": "https://www.tensorflow.org/hub/caching",
        "title": "t",
        "content": "# x\n",
    }
    bad_file = tmp_path / "bad.jsonl.gz"
    _write_gz(bad_file, [json.dumps(good) + "\n", "{not json\n"])
    result = run("import", str(bad_file))
    assert result.exit_code == 2 and "line 2" in result.stderr
    # Nothing written: the import is one transaction (the store may exist, but it is empty).
    assert _stored_count(run) == 0

    truncated = tmp_path / "truncated.jsonl.gz"
    _write_gz(truncated, [json.dumps(good) + "\n"] * 50)
    truncated.write_bytes(truncated.read_bytes()[:-30])
    result = run("import", str(truncated))
    assert result.exit_code == 2 and "truncated or corrupt" in result.stderr
    assert _stored_count(run) == 0

    # Saved by an editor on Windows: a byte-order mark first, CRLF line ends.
    ok = tmp_path / "ok.jsonl"
    ok.write_bytes(("\ufeff" + json.dumps(good) + "\r\n").encode("utf-8"))
    assert run("import", str(ok)).exit_code == 0
    assert run("get", "--offline", TF).stdout == "# x\n"


def test_several_files_are_one_import(run, tmp_path: Path):
    def record(name: str) -> str:
        return json.dumps({"name": name, "uri": "https://x.test/", "title": "t", "content": "c"})

    first, second = tmp_path / "chrome.jsonl.gz", tmp_path / "tensorflow.jsonl"
    _write_gz(first, [record("documents/developer.chrome.com/a") + "\n"])
    second.write_text(record(TF) + "\n{not json\n", encoding="utf-8")
    # A bad record in the last file: none of the first file's are stored, and the error
    # names the file and the line to fix.
    result = run("import", str(first), str(second))
    assert result.exit_code == 2 and "tensorflow.jsonl" in result.stderr
    assert "line 2" in result.stderr
    assert _stored_count(run) == 0
    missing = run("import", str(first), str(tmp_path / "typo.jsonl"))
    assert missing.exit_code == 2 and "typo.jsonl" in missing.stderr
    assert _stored_count(run) == 0

    second.write_text(record(TF) + "\n", encoding="utf-8")
    result = run("import", str(first), str(second))
    assert result.exit_code == 0 and "imported 2 documents (2 new" in result.stderr
    assert _stored_count(run) == 2


def test_import_sample_and_db_commands(run):
    assert "imported 50 documents" in run("import", "--sample").stderr
    assert "up to date" in run("db", "status").stdout
    assert run("db", "upgrade").exit_code == 0


def test_mcp_transport_from_environment(run, emulator, monkeypatch):
    monkeypatch.setenv("DK_MIRROR_TRANSPORT", "mcp")
    assert run("get", TF).exit_code == 0
    assert emulator.count(tool="get_documents") == 1
    assert emulator.count("/v1/") == 0


def test_a_mistyped_command_gets_a_suggestion_even_before_it_is_loaded():
    """In a fresh process no lazy command is loaded yet, and click suggested only from the
    loaded ones: `serach` got no "did you mean"."""
    import subprocess
    import sys

    for typed, meant in (("serach", "search"), ("snapshto", "snapshot"), ("imprt", "import")):
        result = subprocess.run(
            [sys.executable, "-m", "mirror", typed, "x"], capture_output=True, text=True
        )
        assert result.returncode == 2
        assert f"No such command '{typed}'. Did you mean '{meant}'?" in result.stderr
    nothing = subprocess.run(
        [sys.executable, "-m", "mirror", "zzz"], capture_output=True, text=True
    )
    assert nothing.returncode == 2 and "Did you mean" not in nothing.stderr
