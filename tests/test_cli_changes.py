"""`dk-mirror changes` as a user runs it: newest first, one line and the diff command each,
--json, the filters, and one-line errors for bad input."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from mirror.models import Document
from mirror.store.store import Store

EXT = "documents/developer.chrome.com/docs/extensions/"
A, B = EXT + "a", "documents/web.dev/articles/b"
PAGE = "# Title\n\nIntro.\n\n## Usage\n\n```js\nchrome.storage.local.get();\n```\n"
WARNED = PAGE + "\n{% Aside 'caution' %}\nQuota is 10 MB.\n{% endAside %}\n"


@pytest.fixture
def logged(db_url: str) -> str:
    """A store whose log holds: a and b added, a given a caution notice, b removed."""
    store = Store.open(db_url)
    try:
        store.put([Document(A, content=PAGE), Document(B, content=PAGE)], fetched_at=1000,
                  upstream="t")  # fmt: skip
        store.put([Document(A, content=WARNED)], fetched_at=2000, upstream="t")
        store.apply_stream(iter([B]), fetched_at=3000, upstream="snapshot s")
    finally:
        store.close()
    return db_url


def test_changes_lists_newest_first_with_the_command_showing_each(logged, cli_offline) -> None:  # type: ignore[no-untyped-def]
    run = cli_offline("changes")
    assert run.exit_code == 0, run.output
    lines = run.stdout.splitlines()
    assert [line.split()[0] for line in lines[::2]] == ["#4", "#3", "#2", "#1"]
    assert lines[0].split()[3:5] == ["removed", B]
    assert lines[2].split()[3:5] == ["changed", A]
    assert lines[2].endswith("caution notice added; text changed")
    assert lines[1].strip() == f"dk-mirror history {B}"
    command = shlex.split(lines[3].strip())
    assert command[:3] == ["dk-mirror", "diff", A] and command[3] == "--from"
    shown = cli_offline(*command[1:])  # the command it prints works as printed
    assert shown.exit_code == 0 and "+{% Aside 'caution' %}" in shown.stdout


def test_changes_json_and_filters(logged: str, cli_offline, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from mirror.snapshots.lockfile import LockEntry, write_lock

    run = cli_offline("changes", "--json", "--kind", "signal")
    [event] = json.loads(run.stdout)["changes"]
    assert (event["name"], event["kind"], event["classes"]) == (A, "changed", ["signal", "text"])
    assert event["observedAt"] == "1970-01-01T00:33:20.000Z"
    assert event["diffCommand"].startswith(f"dk-mirror diff {A} --from ")

    def names(*args: str) -> list[str]:
        out = cli_offline("changes", "--json", *args)
        assert out.exit_code == 0, out.output
        return [e["name"] + " " + e["kind"] for e in json.loads(out.stdout)["changes"]]

    assert names("--since", "2") == [f"{B} removed", f"{A} changed"]
    assert names("--since", "1970-01-01T00:30:00Z") == [f"{B} removed", f"{A} changed"]
    assert names("--prefix", "developer.chrome.com/docs/extensions/") == [
        f"{A} changed", f"{A} added"]  # fmt: skip
    assert names("--kind", "added", "--limit", "1") == [f"{B} added"]
    lock = tmp_path / "dk-mirror.lock"
    lock.write_text(write_lock([LockEntry(B, "sha256:" + "0" * 64)]), encoding="utf-8")
    assert names("--lock", str(lock)) == [f"{B} removed", f"{B} added"]
    empty = cli_offline("changes", "--since", "7d")  # the log's times are from 1970
    assert empty.exit_code == 0 and empty.stdout == ""
    assert "no changes recorded that match" in empty.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--since", "yesterday"], "'yesterday' is not a time to list changes since"),
        (["--kind", "renamed"], "unknown change kind 'renamed'"),
        (["--lock", "missing.lock"], "missing.lock"),
    ],
)
def test_bad_input_is_one_clear_error(logged, cli_offline, args: list[str], said: str) -> None:  # type: ignore[no-untyped-def]
    run = cli_offline("changes", *args)
    assert run.exit_code == 2, run.output
    assert said in run.stderr and "Traceback" not in run.output
