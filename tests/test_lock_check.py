"""`dk-mirror lock --check`: the lock still matches dk-mirror.toml, judged offline (pre-commit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.snapshots.lockcheck import compare
from mirror.snapshots.lockfile import (
    HEADER,
    LockError,
    parse_lock,
    parse_requirements,
    read_lock,
    write_lock,
)
from tests.pinned_repo import A11Y, INTRO, LOCKED, PREFIX, PinnedRepo, make_pinned_repo


@pytest.fixture(scope="module")
def pinned(tmp_path_factory: pytest.TempPathFactory) -> PinnedRepo:
    return make_pinned_repo(tmp_path_factory.mktemp("pinned") / "project")


@pytest.fixture
def project(pinned: PinnedRepo, tmp_path: Path) -> PinnedRepo:
    """A copy of the pinned project's toml and lock this test may edit."""
    for f in (pinned.toml, pinned.lock):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    return PinnedRepo(tmp_path, tmp_path / pinned.toml.name, tmp_path / pinned.lock.name,
                      pinned.snapshot, pinned.store)  # fmt: skip


def check(project: PinnedRepo, *extra: str):  # type: ignore[no-untyped-def]
    # No DK_MIRROR_DB and a home that does not exist: --check must not need a store.
    env = {"DK_MIRROR_DB": None, "DK_MIRROR_HOME": str(project.root / "no-home"),
           "DK_MIRROR_UPSTREAM": "http://127.0.0.1:9"}  # fmt: skip
    args = ["lock", "--check", "--requirements", str(project.toml), "--output", str(project.lock)]
    return CliRunner().invoke(cli, [*args, *extra], env=env)


def test_the_lock_records_what_it_was_made_from(pinned: PinnedRepo) -> None:
    lock = parse_lock(pinned.lock.read_text())
    assert [e.name for e in lock.entries] == LOCKED
    assert lock.made_from == parse_requirements(pinned.toml.read_text())
    lines = pinned.lock.read_text().splitlines()
    assert lines[:4] == [HEADER, f"# requires name {A11Y}", f"# requires name {INTRO}",
                         f"# requires prefix {PREFIX}"]  # fmt: skip


def test_check_passes_on_a_fresh_lock(project: PinnedRepo) -> None:
    result = check(project)
    assert result.exit_code == 0, result.output
    assert "matches" in result.stderr
    assert not (project.root / "no-home").exists()  # no store was opened
    as_json = check(project, "--json")
    assert json.loads(as_json.stdout)["ok"] is True


def test_check_fails_naming_a_name_added_and_a_prefix_removed(project: PinnedRepo) -> None:
    project.toml.write_text(
        '[docs]\nnames = ["developer.chrome.com/docs/extensions/mv3/a11y",'
        ' "developer.chrome.com/docs/extensions/mv3/intro",'
        ' "developer.chrome.com/docs/extensions/mv3/faq"]\n'
        'searches = [{query = "service worker", limit = 3}]\n'
    )
    result = check(project)
    assert result.exit_code == 1
    faq = "documents/developer.chrome.com/docs/extensions/mv3/faq"
    assert f"added to the requirements, not in the lock: name {faq}" in result.stderr
    assert f"removed from the requirements, still in the lock: prefix {PREFIX}" in result.stderr
    assert 'search {"limit":3,"query":"service worker"}' in result.stderr
    assert "run `dk-mirror lock`" in result.stderr
    report = json.loads(check(project, "--json").stdout)
    assert report["added"] == {"names": [faq], "prefixes": [],
                               "searches": ['{"limit":3,"query":"service worker"}']}  # fmt: skip
    assert report["removed"]["prefixes"] == [PREFIX] and report["ok"] is False


def test_a_removed_name_is_seen_though_its_document_is_still_locked(project: PinnedRepo) -> None:
    project.toml.write_text(project.toml.read_text().replace(
        ', "https://developer.chrome.com/docs/extensions/mv3/intro"', ""))  # fmt: skip
    result = check(project)
    assert result.exit_code == 1
    assert f"removed from the requirements, still in the lock: name {INTRO}" in result.stderr


def test_reordering_or_respelling_the_toml_is_no_change(project: PinnedRepo) -> None:
    project.toml.write_text(
        '[docs]\nprefixes = ["https://www.tensorflow.org/hub/common_signatures/"]\n'
        f'names = ["{INTRO}", "developer.chrome.com/docs/extensions/mv3/a11y"]\n'
    )
    assert check(project).exit_code == 0


def test_an_old_lock_is_read_and_judged_by_names_and_prefixes(project: PinnedRepo) -> None:
    # A lock written before requirements were recorded: no `# requires` lines.
    old = "".join(
        line for line in project.lock.read_text().splitlines(keepends=True)
        if not line.startswith("# requires ")
    )  # fmt: skip
    project.lock.write_text(old)
    assert parse_lock(old).made_from is None and len(read_lock(old)) == len(LOCKED)
    result = check(project)
    assert result.exit_code == 0 and "predates recorded requirements" in result.stderr
    project.toml.write_text(project.toml.read_text().replace(
        "prefixes = [", 'prefixes = ["www.tensorflow.org/hub/migration", '))  # fmt: skip
    result = check(project)
    assert result.exit_code == 1
    assert "no document is locked for it: prefix documents/www.tensorflow.org/hub/migration" in (
        result.stderr
    )


def test_a_hand_edited_lock_missing_a_required_document_fails(project: PinnedRepo) -> None:
    text = project.lock.read_text()
    project.lock.write_text("".join(
        line for line in text.splitlines(keepends=True) if not line.startswith(A11Y)))  # fmt: skip
    result = check(project)
    assert result.exit_code == 1
    assert f"required but no document is locked for it: name {A11Y}" in result.stderr


def test_recorded_requirements_round_trip_and_bad_lines_name_their_line() -> None:
    needs = parse_requirements(
        '[docs]\nnames = ["x.com/b", "x.com/a"]\nprefixes = ["x.com/p/"]\n'
        'searches = [{query = "q w", limit = 2, filter = "data_source = \\"x.com\\""}]\n'
    )
    lock = parse_lock(write_lock([], made_from=needs))
    assert lock.made_from is not None
    assert compare(needs, lock).added == [] and compare(needs, lock).removed == []
    assert set(lock.made_from.searches) == set(needs.searches)
    with pytest.raises(LockError, match="line 2: expected `# requires name"):
        parse_lock(f"{HEADER}\n# requires colour blue\n")
    with pytest.raises(LockError, match="line 2: a recorded search is not valid"):
        parse_lock(f'{HEADER}\n# requires search {{"query": "q", "limit": 0}}\n')
