"""`lock --check --format markdown`: what changed per pinned page, as a pull-request comment.

The flow a CI job runs: a store synced from the lock, `dk-mirror refresh` against upstream
(the emulator) where pages changed, went and appeared, then the summary from the store alone.
"""

from __future__ import annotations

import gzip
import json
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.snapshots.lock_report import PageChange, diff_summary, escape, markdown
from mirror.snapshots.lockcheck import LockDrift
from tests.emulator import Emulator
from tests.pinned_repo import A11Y, INTRO, PREFIX, PinnedRepo, make_pinned_repo

SAMPLE = Path(__file__).resolve().parents[1] / "mirror" / "sample" / "docs.jsonl.gz"
NEW_PAGE = f"{PREFIX}audio"


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> PinnedRepo:
    return make_pinned_repo(tmp_path_factory.mktemp("pinned") / "project")


def _sample() -> dict[str, dict[str, Any]]:
    with gzip.open(SAMPLE, "rt", encoding="utf-8") as lines:
        return {d["name"]: d for d in map(json.loads, lines)}


def _run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_the_summary_names_each_changed_gone_and_new_page_and_its_diff_command(
    pinned: PinnedRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "ci.sqlite3"
    shutil.copy2(pinned.store, db)  # the store `sync --locked` leaves: exactly the lock
    monkeypatch.setenv("DK_MIRROR_DB", str(db))
    check = ("lock", "--check", "--format", "markdown",
             "--requirements", str(pinned.toml), "--output", str(pinned.lock))  # fmt: skip
    same = _run(*check)
    assert same.exit_code == 0, same.output
    assert same.stdout == "### dk-mirror: No pinned page changed since `dk-mirror.lock`.\n\n"

    docs = _sample()
    a11y = docs[A11Y]
    changed = a11y["content"] + "\n## Deprecated | use <b>chrome.scripting</b>\n\nMoved.\n"
    assert "deprecat" not in a11y["content"].lower()
    with Emulator(docs.values(), api_key="test-key") as upstream:
        upstream.put({**a11y, "content": changed})
        upstream.remove(INTRO)
        upstream.put({**docs[f"{PREFIX}text"], "name": NEW_PAGE, "title": "Audio"})
        monkeypatch.setenv("DK_MIRROR_UPSTREAM", upstream.base_url)
        monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", "test-key")
        assert _run("refresh").exit_code == 0
        assert _run("fetch", NEW_PAGE).exit_code == 0  # a crawl or `lock` finds new pages
    monkeypatch.setenv("DK_MIRROR_OFFLINE", "1")
    result = _run(*check)
    assert result.exit_code == 1, result.output
    text = result.stdout
    assert text.startswith(
        "### dk-mirror: Pinned docs differ from `dk-mirror.lock`: 1 changed, 1 added, 1 removed."
    )
    rows = [line for line in text.splitlines() if line.startswith("| ") and "](" in line]
    assert [row.split(" | ")[0] for row in rows] == ["| changed", "| removed", "| added"]
    link = "[developer.chrome.com/docs/extensions/mv3/a11y](https://developer.chrome.com/docs/extensions/mv3/a11y)"
    assert link in rows[0] and "+4 / -0 lines<br>deprecation notice added<br>" in rows[0]
    # The heading's `|` cannot split the row, its HTML is text; the table keeps 4 columns.
    assert "new section: Deprecated \\| use &lt;b&gt;chrome.scripting&lt;/b&gt;" in rows[0]
    assert all(len(re.findall(r"(?<!\\)\|", row)) == 5 for row in rows)
    assert (
        "upstream no longer has this page" in rows[1]
        and INTRO.removeprefix("documents/") in rows[1]
    )
    assert "new page under a locked prefix" in rows[2] and "common\\_signatures/audio" in rows[2]
    assert "1 changed" in text and "Run `dk-mirror lock`" in text
    assert "3 pinned page(s) differ from" in result.stderr

    # The command the row gives prints the whole diff, from the locked version to now.
    (command,) = re.findall(r"`(dk-mirror diff [^`]+)`", rows[0])
    shown = _run(*shlex.split(command)[1:])
    assert shown.exit_code == 0, shown.output
    assert "+## Deprecated | use <b>chrome.scripting</b>" in shown.stdout


def test_a_store_not_synced_from_the_lock_is_a_clear_error(
    pinned: PinnedRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "other.sqlite3"))
    _run("fetch", "--offline", A11Y)  # creates an empty store, the name not cached
    result = _run("lock", "--check", "--format", "markdown",
                  "--requirements", str(pinned.toml), "--output", str(pinned.lock))  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "4 locked document(s) are not in the store" in result.stderr
    assert "dk-mirror sync --locked" in result.stderr and "Traceback" not in result.output
    wrong = _run("lock", "--format", "markdown", "--requirements", str(pinned.toml))
    assert wrong.exit_code == 2 and "--format goes with --check" in wrong.stderr


def test_the_diff_summary_counts_lines_and_names_sections_but_not_code_comments() -> None:
    old = "# Title\n\nIntro.\n\n## Setup\n\nStep.\n\n```sh\n# install it\n```\n"
    new = "# Title\n\nIntro, edited.\n\n## Quotas\n\nLimits.\n\n```sh\n# install it now\n```\n"
    assert diff_summary(old, new) == (
        "+4 / -4 lines", "new section: Quotas", "section removed: Setup")  # fmt: skip
    assert diff_summary(old, old) == ("same text; only metadata changed",)
    assert diff_summary(old, new, ["deprecation notice added"])[:2] == (
        "+4 / -4 lines", "deprecation notice added")  # fmt: skip
    many = old + "".join(f"\n## Part {i}\n" for i in range(10))
    assert diff_summary(old, many)[-1] == "and 7 more changes"


def test_markdown_escapes_what_came_from_documents() -> None:
    assert escape("a|b *c* [x](javascript:y) <img src=x> `t`") == (
        "a\\|b \\*c\\* \\[x\\](javascript:y) &lt;img src=x&gt; \\`t\\`"
    )
    assert escape("two\nlines") == "two lines"


def test_the_summary_stays_under_the_comment_limit_and_counts_what_it_left_out() -> None:
    pages = [PageChange(f"documents/example.com/{'x' * 150}/{i}", "changed", None, None,
                        ("+1 / -1 lines",)) for i in range(2000)]  # fmt: skip
    drift = LockDrift(added=[("name", "documents/example.com/new")])
    text = markdown(pages, drift, lock_name="dk-mirror.lock", requirements_name="dk-mirror.toml",
                    max_chars=20_000)  # fmt: skip
    assert len(text) <= 20_000
    kept = text.count("| changed |")
    assert 50 < kept < 2000
    assert f"…and {2000 - kept} more page(s), left out to fit one comment." in text
    # The requirement drift and the advice are never cut.
    assert "added to the requirements, not in the lock: name documents/example.com/new" in text
    assert text.rstrip().endswith("to take the new versions.")
