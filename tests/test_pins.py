"""Reproducible snapshots, locks and Markdown trees through Mirror and the CLI, on real files."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import random
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import NetworkForbidden
from mirror.models import Document
from mirror.service import Mirror
from mirror.snapshots.format import SnapshotError
from tests.conftest import open_store, seed, seed_each, stored
from tests.emulator_fixtures import corpus_documents

TF = "documents/www.tensorflow.org/hub/caching"


def _docs(n: int | None = None) -> list[Document]:
    raw = corpus_documents("tensorflow.org") + corpus_documents("developer.chrome.com-intl")[:60]
    docs = [Document.from_api(d).with_derived_fields() for d in raw]
    return docs[:n] if n else docs


_OPEN: list[Mirror] = []


@pytest.fixture(autouse=True)
def _close_mirrors():  # type: ignore[no-untyped-def]
    yield
    while _OPEN:
        _OPEN.pop().close()


def _store(tmp_path: Path, name: str, docs: list[Document], **settings) -> Mirror:  # type: ignore[no-untyped-def]
    mirror = Mirror(Settings(db_url=f"sqlite:///{tmp_path / name}.sqlite3", **settings))
    # One write per document: insertion order is what the caller gave.
    seed_each(mirror, [(doc, random.random() * 1e9) for doc in docs])
    _OPEN.append(mirror)
    return mirror


def apply_changes(mirror: Mirror, put: list[Document], remove: list[str]) -> None:
    store = open_store(mirror)
    try:
        store.apply_stream([*put, *remove], fetched_at=1.0, upstream="t")
    finally:
        store.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _contents(mirror: Mirror) -> dict[str, str | None]:
    return {
        n: c.document.content
        for n, c in stored(mirror, [s.name for s in mirror.list_documents()]).items()
    }


@pytest.mark.slow
def test_same_documents_give_identical_bytes_whatever_the_order(tmp_path: Path):
    docs = _docs()
    shuffled = docs[:]
    random.Random(7).shuffle(shuffled)
    a = _store(tmp_path, "a", docs)
    b = _store(tmp_path, "b", shuffled)
    a.export_snapshot(tmp_path / "a1.snap")
    a.export_snapshot(tmp_path / "a2.snap")
    b.export_snapshot(tmp_path / "b.snap")
    assert (
        _digest(tmp_path / "a1.snap")
        == _digest(tmp_path / "a2.snap")
        == _digest(tmp_path / "b.snap")
    )
    empty = _store(tmp_path, "empty", [])
    empty.import_snapshot(tmp_path / "a1.snap")
    empty.export_snapshot(tmp_path / "round.snap")
    assert _digest(tmp_path / "round.snap") == _digest(tmp_path / "a1.snap")


def _flip_one_byte(src: Path, dst: Path, name: str) -> None:
    lines = gzip.decompress(src.read_bytes()).split(b"\n")
    for i, line in enumerate(lines):
        if name.encode() in line and line.startswith(b'{"document"'):
            at = line.index(b'"content":"') + 20
            lines[i] = line[:at] + bytes([line[at] ^ 1]) + line[at + 1 :]
            break
    dst.write_bytes(gzip.compress(b"\n".join(lines), mtime=0))


@pytest.mark.slow
def test_flipped_byte_fails_verify_naming_the_document_and_import_changes_nothing(tmp_path: Path):
    source = _store(tmp_path, "src", _docs(30))
    good = tmp_path / "good.snap"
    source.export_snapshot(good)
    bad = tmp_path / "bad.snap"
    victim = sorted(d.name for d in _docs(30))[5]
    _flip_one_byte(good, bad, victim)
    runner = CliRunner()
    result = runner.invoke(cli, ["snapshot", "verify", str(bad)])
    assert result.exit_code == 1 and victim in result.stderr
    assert runner.invoke(cli, ["snapshot", "verify", str(good)]).exit_code == 0
    target = _store(tmp_path, "target", _docs(3))
    before = _contents(target)
    with pytest.raises(SnapshotError) as caught:
        target.import_snapshot(bad)
    assert victim in caught.value.names
    assert _contents(target) == before


@pytest.mark.slow
@pytest.mark.parametrize("cut", [0.1, 0.5, 0.99])
def test_truncated_snapshot_is_refused_and_the_store_untouched(tmp_path: Path, cut: float):
    source = _store(tmp_path, "src", _docs(20))
    good = tmp_path / "good.snap"
    source.export_snapshot(good)
    data = good.read_bytes()
    truncated = tmp_path / "truncated.snap"
    truncated.write_bytes(data[: int(len(data) * cut)])
    target = _store(tmp_path, "target", _docs(2))
    before = _contents(target)
    with pytest.raises(SnapshotError, match=r"truncated|corrupt|manifest"):
        target.import_snapshot(truncated)
    assert _contents(target) == before


@pytest.mark.slow
def test_base_plus_delta_equals_full_export_and_wrong_base_is_refused(tmp_path: Path):
    docs = _docs(40)
    mirror = _store(tmp_path, "live", docs[:30])
    base = tmp_path / "base.snap"
    mirror.export_snapshot(base)
    changed = Document.from_api(
        {**docs[3].to_api(), "content": "# rewritten\n"}
    ).with_derived_fields()
    apply_changes(mirror, [changed, *docs[30:]], [docs[7].name])
    delta = tmp_path / "delta.snap"
    manifest = mirror.export_snapshot(delta, since=base)
    full = tmp_path / "full.snap"
    assert mirror.export_snapshot(full).root == manifest.root
    replica = _store(tmp_path, "replica", [])
    replica.import_snapshot(base)
    replica.import_snapshot(delta)
    replica.export_snapshot(tmp_path / "replica.snap")
    assert _digest(tmp_path / "replica.snap") == _digest(full)
    wrong = _store(tmp_path, "wrong", docs[:5])
    before = _contents(wrong)
    with pytest.raises(SnapshotError, match="made against"):
        wrong.import_snapshot(delta)
    assert _contents(wrong) == before


def test_a_delta_without_a_selection_takes_its_bases(tmp_path: Path):
    """`snapshot export docs.snap --prefix P` then `export --since docs.snap` (no --prefix):
    the delta holds what changed under P, not every other document of the store."""
    docs = _docs()
    hub = "documents/www.tensorflow.org/hub/"
    under = [d for d in docs if d.name.startswith(hub)]
    mirror = _store(tmp_path, "m", [])
    seed(mirror, docs, fetched_at=1.0)  # in one write: the order does not matter here
    base = tmp_path / "docs.snap"
    assert mirror.export_snapshot(base, prefix="www.tensorflow.org/hub/").count == len(under)
    assert 0 < len(under) < len(docs)
    unchanged = mirror.export_snapshot(tmp_path / "same.snap", since=base)
    assert unchanged.count == 0
    changed = Document.from_api({**under[0].to_api(), "content": "# new\n"}).with_derived_fields()
    outside = Document.from_api({**docs[-1].to_api(), "content": "# new\n"}).with_derived_fields()
    assert not outside.name.startswith(hub)
    apply_changes(mirror, [changed, outside], [under[1].name])
    delta = mirror.export_snapshot(tmp_path / "delta.snap", since=base)
    assert delta.count == 2 and delta.selection == {"prefix": hub}
    # A base made from a names file: the delta covers the same documents (one now removed).
    names = [d.name for d in under[2:6]]
    listed = mirror.export_snapshot(tmp_path / "listed.snap", names=names)
    apply_changes(mirror, [], [names[0]])
    assert mirror.export_snapshot(tmp_path / "d2.snap", since=tmp_path / "listed.snap").count == 1
    assert listed.count == 4


def test_diff_lists_added_removed_changed(tmp_path: Path):
    docs = _docs(10)
    mirror = _store(tmp_path, "m", docs[:8])
    mirror.export_snapshot(tmp_path / "a.snap")
    changed = Document.from_api({**docs[0].to_api(), "content": "# new\n"}).with_derived_fields()
    apply_changes(mirror, [changed, docs[8]], [docs[1].name])
    mirror.export_snapshot(tmp_path / "b.snap")
    result = CliRunner().invoke(
        cli,
        [
            "snapshot",
            "diff",
            str(tmp_path / "a.snap"),
            str(tmp_path / "b.snap"),
            "--content",
            "--exit-code",
        ],
    )
    assert result.exit_code == 1
    assert f"added    {docs[8].name}" in result.stdout
    assert f"removed  {docs[1].name}" in result.stdout
    assert f"changed  {docs[0].name} (content)" in result.stdout
    assert "+# new" in result.stdout


def test_check_reports_documents_changed_upstream(tmp_path: Path, emulator):
    mirror = _store(tmp_path, "m", [], upstream=emulator.base_url, api_key=emulator.api_key)
    names = [d["name"] for d in corpus_documents("tensorflow.org")[:5]]
    mirror.fetch(names)
    snap = tmp_path / "pinned.snap"
    mirror.export_snapshot(snap)
    assert mirror.check_snapshot(snap).ok
    doc = next(d for d in corpus_documents("tensorflow.org") if d["name"] == names[2])
    emulator.put({**doc, "content": doc["content"] + "\nmore\n"})
    emulator.remove(names[4])
    emulator.reset()
    report = mirror.check_snapshot(snap, max_age=10 * 365 * 86400)
    assert report.changed == [names[2]] and report.removed == [names[4]] and not report.ok
    assert all(r.query.get("view") == ["DOCUMENT_VIEW_BASIC"] for r in emulator.requests)


def test_lock_sync_locked_and_strict_offline(tmp_path: Path, emulator, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "ci.sqlite3"))
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", emulator.base_url)
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", emulator.api_key)
    names = [d["name"] for d in corpus_documents("tensorflow.org")[:4]]
    Path("dk-mirror.toml").write_text(
        f"[docs]\nnames = {names[:2]!r}\n".replace("'", '"')
        + 'searches = [{query = "caching model downloads", limit = 2}]\n'
    )
    runner = CliRunner()
    locked = runner.invoke(cli, ["lock"])
    assert locked.exit_code == 0, locked.stderr
    lock_text = Path("dk-mirror.lock").read_text()
    assert names[0] in lock_text and TF in lock_text
    assert (
        runner.invoke(
            cli, ["snapshot", "export", "pinned.snap", "--lock", "dk-mirror.lock"]
        ).exit_code
        == 0
    )

    # A fresh CI store, strict offline: sync from the snapshot works with zero requests.
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "fresh.sqlite3"))
    emulator.reset()
    ok = runner.invoke(cli, ["--strict-offline", "sync", "--locked", "--from", "pinned.snap"])
    assert ok.exit_code == 0, ok.stderr
    assert runner.invoke(cli, ["get", "--strict-offline", TF]).exit_code == 0
    assert emulator.count() == 0

    # Strict offline: every operation that would reach the network is an error, not a fallback.
    monkeypatch.setenv("DK_MIRROR_STRICT_OFFLINE", "1")
    for args in (["fetch", names[3]], ["get", names[3]], ["snapshot", "check", "pinned.snap"]):
        result = runner.invoke(cli, args)
        assert result.exit_code != 0, args
        assert "strict offline" in result.stderr or "not in the local store" in result.stderr
    with pytest.raises(NetworkForbidden):
        Mirror(Settings.resolve()).fetch([names[3]])
    assert emulator.count() == 0
    monkeypatch.delenv("DK_MIRROR_STRICT_OFFLINE")

    # One locked document changes upstream: sync (online, from an empty store) names it, writes nothing.
    doc = next(d for d in corpus_documents("tensorflow.org") if d["name"] == names[1])
    emulator.put({**doc, "content": "# changed upstream\n"})
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "other.sqlite3"))
    failed = runner.invoke(cli, ["sync", "--locked"])
    assert (
        failed.exit_code == 1
        and names[1] in failed.stderr
        and "nothing was written" in failed.stderr
    )
    status = runner.invoke(cli, ["status", "--json"])
    assert '"documents": 0' in status.stdout


def test_export_md_writes_a_deterministic_contained_tree(tmp_path: Path):
    docs = _docs(25)
    mirror = _store(tmp_path, "m", docs)
    assert mirror.export_markdown(tmp_path / "one") == 25
    mirror.export_markdown(tmp_path / "two")
    files_one = sorted(
        p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*") if p.is_file()
    )
    files_two = sorted(
        p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*") if p.is_file()
    )
    # 25 documents, index.md, NOTICE.md and the export's manifest
    assert files_one == files_two and len(files_one) == 28
    for rel in files_one:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes()
        assert (tmp_path / "one" / rel).resolve().is_relative_to((tmp_path / "one").resolve())
    page = (tmp_path / "one" / "www.tensorflow.org" / "hub" / "caching.md").read_text()
    assert page.startswith("---\n") and 'name: "documents/www.tensorflow.org/hub/caching"' in page
    assert "caching.md" in (tmp_path / "one" / "index.md").read_text()
    assert not list((tmp_path / "one").rglob("*.tmp"))


def test_check_max_age_measures_the_snapshot_file_not_its_content(tmp_path: Path, emulator):
    mirror = _store(tmp_path, "m", [], upstream=emulator.base_url, api_key=emulator.api_key)
    names = [d["name"] for d in corpus_documents("tensorflow.org")[:3]]
    mirror.fetch(names)
    snap = tmp_path / "pinned.snap"
    mirror.export_snapshot(snap)
    env = {
        "DK_MIRROR_DB": mirror.settings.db_url,
        "DK_MIRROR_UPSTREAM": emulator.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": emulator.api_key,
    }
    args = ["snapshot", "check", str(snap), "--max-age", "30d"]
    fresh = CliRunner().invoke(cli, args, env=env)
    # The pinned pages were updated long ago; the file was written a moment ago.
    assert fresh.exit_code == 0, fresh.stderr
    assert "written 0s ago" in fresh.stderr or "written 1s ago" in fresh.stderr
    newest = max(d.document.update_time for d in stored(mirror, names).values())
    assert f"content as of {newest}" in fresh.stderr
    report = mirror.check_snapshot(snap, max_age=30 * 86400)
    assert report.ok and report.content_as_of == newest and report.age_seconds < 60
    old = time.time() - 61 * 86400
    os.utime(snap, (old, old))
    stale = CliRunner().invoke(cli, [*args, "--json"], env=env)
    assert stale.exit_code == 1
    data = json.loads(stale.stdout)
    assert data["tooOld"] and 60 * 86400 < data["ageSeconds"] < 62 * 86400
    assert data["writtenAt"].endswith("Z") and data["contentAsOf"] == newest


def test_check_max_age_of_a_committed_snapshot_is_its_commit_time(tmp_path: Path, emulator):
    """A CI checkout resets every file's mtime: a snapshot committed 61 days ago is 61 days
    old however fresh its mtime, and one changed since its commit is as old as its mtime."""
    mirror = _store(tmp_path, "m", [], upstream=emulator.base_url, api_key=emulator.api_key)
    names = [d["name"] for d in corpus_documents("tensorflow.org")[:3]]
    mirror.fetch(names[:2])
    repo = tmp_path / "repo"
    repo.mkdir()
    snap = repo / "pinned.snap"
    mirror.export_snapshot(snap)
    old = f"@{int(time.time() - 61 * 86400)} +0000"
    git_env = {**os.environ, "GIT_AUTHOR_DATE": old, "GIT_COMMITTER_DATE": old}
    for step in (["init", "-q"], ["add", "pinned.snap"], ["commit", "-qm", "pin"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *step],
            cwd=repo, env=git_env, check=True,
        )  # fmt: skip
    os.utime(snap)  # as a fresh checkout leaves it
    env = {
        "DK_MIRROR_DB": mirror.settings.db_url,
        "DK_MIRROR_UPSTREAM": emulator.base_url,
        "DEVELOPER_KNOWLEDGE_API_KEY": emulator.api_key,
    }
    args = ["snapshot", "check", str(snap), "--max-age", "30d"]
    stale = CliRunner().invoke(cli, args, env=env)
    assert stale.exit_code == 1, stale.stderr
    assert (
        "written 61d ago (by its git commit" in stale.stderr
        and "older than --max-age" in stale.stderr
    )
    data = json.loads(CliRunner().invoke(cli, [*args, "--json"], env=env).stdout)
    assert data["tooOld"] and data["writtenAtSource"] == "git commit"
    # Rewritten since the commit (one more page pinned): its own mtime is when it was written.
    mirror.fetch(names[2:])
    mirror.export_snapshot(snap)
    fresh = CliRunner().invoke(cli, args, env=env)
    assert fresh.exit_code == 0 and "(by its file modification time" in fresh.stderr


def test_reimporting_an_applied_delta_is_a_no_op(tmp_path: Path):
    docs = _docs(12)
    mirror = _store(tmp_path, "live", docs[:10])
    base = tmp_path / "base.snap"
    mirror.export_snapshot(base)
    apply_changes(mirror, [docs[10]], [docs[2].name])
    delta = tmp_path / "delta.snap"
    mirror.export_snapshot(delta, since=base)
    replica = _store(tmp_path, "replica", [])
    replica.import_snapshot(base)
    first = replica.import_snapshot(delta)
    assert not first.already and first.written == 1 and first.removed == 1
    before = _contents(replica)
    env = {"DK_MIRROR_DB": replica.settings.db_url}
    again = CliRunner().invoke(cli, ["snapshot", "import", str(delta)], env=env)
    assert again.exit_code == 0, again.stderr
    assert "already applied" in again.stderr
    as_json = CliRunner().invoke(cli, ["snapshot", "import", str(delta), "--json"], env=env)
    assert json.loads(as_json.stdout)["alreadyApplied"] is True
    assert _contents(replica) == before


def test_sync_offline_with_nothing_to_sync_from_is_one_error_with_a_hint(
    tmp_path: Path, monkeypatch
):  # type: ignore[no-untyped-def]
    mirror = _store(tmp_path, "m", [])
    seed(mirror, _docs(13), fetched_at=1.0)
    lock = tmp_path / "dk-mirror.lock"
    from mirror.snapshots import lockfile

    lock.write_text(lockfile.write_lock([lockfile.LockEntry.from_document(d) for d in _docs(13)]))
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "fresh.sqlite3"))
    result = CliRunner().invoke(cli, ["sync", "--locked", "--lock", str(lock), "--strict-offline"])
    assert result.exit_code == 4, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and "13 document(s) not in the local store" in errors[0], errors
    assert "hint:" in result.stderr and "--from docs.snap" in result.stderr


def test_a_tampered_lock_says_the_snapshot_holds_other_bytes(tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    from mirror.snapshots import lockfile

    docs = _docs(3)
    mirror = _store(tmp_path, "m", [])
    seed(mirror, docs, fetched_at=1.0)
    snap = tmp_path / "docs.snap"
    mirror.export_snapshot(snap)
    entries = [lockfile.LockEntry.from_document(d) for d in docs]
    tampered = replace(entries[1], sha256="sha256:" + "0" * 64)
    lock = tmp_path / "dk-mirror.lock"
    lock.write_text(lockfile.write_lock([entries[0], tampered, entries[2]]))
    monkeypatch.setenv("DK_MIRROR_DB", str(tmp_path / "fresh.sqlite3"))
    args = ["sync", "--locked", "--lock", str(lock), "--from", str(snap), "--strict-offline"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert "not in the store (the lock pins" not in result.stderr
    assert f"{docs[1].name}: not in the store, and snapshot docs.snap has content " in (
        result.stderr
    )
    assert f"{entries[1].sha256}; the lock pins {tampered.sha256}" in result.stderr
    assert "1 of 3 locked documents differ; nothing was written" in result.stderr


def test_lock_without_a_toml_says_what_is_missing(tmp_path: Path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    for args in (["lock"], ["lock", "--check"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        error = result.stderr.strip().splitlines()[-1]
        assert error.startswith("Error: dk-mirror.toml was not found: `dk-mirror lock` reads")
        assert "[docs]" in error and "Invalid value for '--requirements'" not in result.stderr
    assert not (tmp_path / "dk-mirror.lock").exists()
