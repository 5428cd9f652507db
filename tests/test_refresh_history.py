"""Refresh (BASIC-view compare, refetch only what changed) and document history, end to end
against the test upstream, on real SQLite files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.errors import InvalidInput
from mirror.models import Document, Version, content_sha256
from mirror.policy import Mode, refetch_needed
from mirror.service import Mirror
from mirror.service.history import resolve
from mirror.service.refresh import RefreshInterrupted
from mirror.store.db import engine as engines
from mirror.store.db.migrate import upgrade
from mirror.store.schema.tables import SCHEMA_REVISION
from mirror.store.store import Store

from .conftest import no_wait_retry
from .emulator import Emulator, Fault
from .emulator_fixtures import synthetic_documents
from .test_migrations import insert_old_documents

# The store, crawl, snapshot and service suites run on SQLite and PostgreSQL.
pytestmark = pytest.mark.both_backends

COUNT = 500
CHANGED = [3, 77, 150, 311, 499]
BASIC, CONTENT = "DOCUMENT_VIEW_BASIC", "DOCUMENT_VIEW_CONTENT"


@pytest.fixture
def docs() -> list[dict]:
    return synthetic_documents(COUNT)


@pytest.fixture
def upstream(docs: list[dict]) -> Iterator[Emulator]:
    with Emulator(docs, api_key="test-key") as running:
        yield running


@pytest.fixture
def build(db_url: str, upstream: Emulator):  # type: ignore[no-untyped-def]
    made: list[Mirror] = []

    def make(**overrides) -> Mirror:  # type: ignore[no-untyped-def]
        clock = overrides.pop("clock", None)
        fields = {"db_url": db_url, "upstream": upstream.base_url, "api_key": "test-key"}
        settings = Settings(**{**fields, **overrides})
        extra = {"clock": clock} if clock else {}
        mirror = Mirror(settings, retry=no_wait_retry(), **extra)
        made.append(mirror)
        return mirror

    yield make
    for mirror in made:
        mirror.close()


def _names(docs: list[dict]) -> list[str]:
    return [d["name"] for d in docs]


def _change(upstream: Emulator, docs: list[dict], index: int, note: str = "") -> str:
    doc = docs[index]
    new = {**doc, "content": doc["content"] + f"\nA new paragraph {note or index}.\n"}
    upstream.put(new)
    docs[index] = new
    return doc["name"]


def _views(upstream: Emulator) -> list[tuple[str, list[str]]]:
    """(view, names) of every batchGet the upstream saw."""
    assert all(r.path == "/v1/documents:batchGet" for r in upstream.requests), [
        r.path for r in upstream.requests
    ]
    return [(r.query.get("view", [CONTENT])[0], r.query["names"]) for r in upstream.requests]


def _footprint(db_url: str) -> dict[str, int]:
    """What history and content occupy: rows and content bytes."""
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            one = lambda sql: int(conn.execute(text(sql)).scalar() or 0)  # noqa: E731
            return {
                "documents": one("SELECT count(*) FROM documents"),
                "versions": one("SELECT count(*) FROM document_versions"),
                "contents": one("SELECT count(*) FROM version_contents"),
                "content_bytes": one("SELECT sum(length(content)) FROM documents")
                + one("SELECT coalesce(sum(length(content)), 0) FROM version_contents"),
                "index rows": one("SELECT count(*) FROM search_docs"),
            }
    finally:
        engine.dispose()


def test_refresh_after_five_changes_asks_basic_then_fetches_only_those(
    build, upstream: Emulator, docs: list[dict]
) -> None:
    mirror = build()
    assert mirror.fetch(_names(docs)).fetched == COUNT
    upstream.reset()
    changed = sorted(_change(upstream, docs, i) for i in CHANGED)

    report = mirror.refresh()

    views = _views(upstream)
    basic = [names for view, names in views if view == BASIC]
    content = [names for view, names in views if view != BASIC]
    assert len(basic) == COUNT // 20 == 25
    assert sorted(n for names in basic for n in names) == sorted(_names(docs))
    assert len(content) == 1 and sorted(content[0]) == changed
    assert (report.selected, report.checked, report.unchanged) == (COUNT, COUNT, COUNT - 5)
    assert sorted(report.changed) == changed and report.new_versions == 5
    assert report.gone == [] and report.failed == []

    by_name = {d["name"]: d for d in docs}
    for name in changed:
        versions = mirror.history(name)
        assert [v.number for v in versions] == [2, 1]
        assert [v.current for v in versions] == [True, False]
        assert versions[0].sha256 == content_sha256(by_name[name]["content"])
        assert versions[0].update_time != versions[1].update_time
        result = mirror.diff_versions(name)
        assert (result.old.number, result.new.number) == (1, 2)
        added = [line for line in result.text.splitlines() if line.startswith("+")]
        assert added[1:] == ["+", f"+A new paragraph {docs.index(by_name[name])}."]
    assert [v.number for v in mirror.history(docs[0]["name"])] == [1]
    got = mirror.get_documents([changed[0]], mirror.default_mode())
    assert got.documents[0].content == by_name[changed[0]]["content"]


def test_an_unchanged_refresh_stores_nothing_and_counts_as_a_check(
    build, upstream: Emulator, docs: list[dict], db_url: str, tmp_path: Path
) -> None:
    now = [1_000_000.0]
    mirror = build(clock=lambda: now[0])
    mirror.fetch(_names(docs))
    before = _footprint(db_url)
    assert before["versions"] == COUNT and before["contents"] == 0
    upstream.reset()
    now[0] += 3 * 86400

    report = mirror.refresh(older_than=2 * 86400)

    assert (report.checked, report.unchanged, report.changed) == (COUNT, COUNT, [])
    assert all(view == BASIC for view, _ in _views(upstream)) and len(upstream.requests) == 25
    assert _footprint(db_url) == before
    # Checked now: --older-than counts from this check, and --max-age serves the copy.
    assert {s.fetched_at for s in mirror.list_documents()} == {now[0]}
    upstream.reset()
    now[0] += 86400
    assert mirror.refresh(older_than=2 * 86400).selected == 0
    assert upstream.requests == []
    # Re-importing the same records stores nothing new either.
    records = tmp_path / "same.jsonl"
    with records.open("w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(doc) + "\n")
    mirror.import_file(records, overwrite=True)
    mirror.import_file(records, overwrite=True)
    assert _footprint(db_url) == before


def test_refresh_limits_to_a_prefix(build, upstream: Emulator, docs: list[dict]) -> None:
    mirror = build()
    mirror.fetch(_names(docs))
    upstream.reset()
    report = mirror.refresh(prefix="docs.example.dev/guide/page-001")
    assert report.selected == report.checked == 100
    assert len(upstream.requests) == 5


def test_every_write_path_records_versions_the_same_way(
    build, upstream: Emulator, docs: list[dict], tmp_path: Path, db_url: str
) -> None:
    mirror = build()
    name = docs[5]["name"]
    mirror.get_documents([name])  # get
    first = docs[5]["content"]
    _change(upstream, docs, 5, "by fetch")
    mirror.fetch([name], Mode(refresh=True))  # fetch --refresh
    records = tmp_path / "one.jsonl"
    records.write_text(json.dumps({**docs[5], "content": "imported\n"}) + "\n", encoding="utf-8")
    mirror.import_file(records, overwrite=True)  # import
    snap = tmp_path / "now.snap"
    store = Store.open(db_url)
    try:
        old = store.version_document(name, content_sha256(first))
        assert old is not None and old.content == first
    finally:
        store.close()
    versions = mirror.history(name)
    assert [v.number for v in versions] == [3, 2, 1]
    assert [v.upstream.split()[0] for v in versions] == ["import", "rest", "rest"]
    mirror.export_snapshot(snap, names=[name])
    mirror.import_snapshot(snap)  # snapshot import, same content: nothing new
    assert [v.number for v in mirror.history(name)] == [3, 2, 1]


def test_retention_keeps_the_newest_versions(
    build, upstream: Emulator, docs: list[dict], db_url: str
) -> None:
    mirror = build(keep_versions=2)
    name = docs[9]["name"]
    mirror.fetch([name])
    for round_ in range(3):
        _change(upstream, docs, 9, f"round {round_}")
        assert mirror.refresh().changed == [name]
    versions = mirror.history(name)
    assert [v.number for v in versions] == [4, 3] and versions[0].current
    # Only version 3's content is kept apart (version 4's is the current copy).
    assert _footprint(db_url)["contents"] == 1
    assert "round 1" in mirror.diff_versions(name).text
    assert mirror.prune_history(keep=1) == 1
    assert [v.number for v in mirror.history(name)] == [4]
    assert _footprint(db_url)["contents"] == 0


def test_gone_documents_are_reported_kept_and_flagged(
    build, upstream: Emulator, docs: list[dict]
) -> None:
    mirror = build()
    mirror.fetch(_names(docs[:40]))
    gone = docs[7]["name"]
    upstream.remove(gone)
    report = mirror.refresh()
    assert report.gone == [gone] and report.unchanged == 39 and report.failed == []
    assert mirror.get_documents([gone], mirror.default_mode()).documents[0].name == gone
    assert mirror.history(gone)[0].gone_since is not None
    upstream.put(docs[7] | {"updateTime": "2026-01-01T00:00:00Z"})
    assert mirror.refresh().unchanged == 40
    assert mirror.history(gone)[0].gone_since is None


def test_a_failing_batch_is_reported_and_the_rest_saved(
    build, upstream: Emulator, docs: list[dict]
) -> None:
    mirror = build()
    mirror.fetch(_names(docs[:100]))
    bad = docs[45]["name"]
    upstream.inject(Fault("status", status=503), times=-1, name=bad)
    report = mirror.refresh(concurrency=2)
    assert sorted(report.failed) == sorted(_names(docs[40:60]))
    assert report.unchanged == 80 and report.error is not None


def test_ctrl_c_keeps_what_was_checked(build, upstream: Emulator, docs: list[dict]) -> None:
    now = [2_000_000.0]
    mirror = build(clock=lambda: now[0])
    mirror.fetch(_names(docs[:100]))
    now[0] += 10

    def stop_after_two_batches(done: int, _total: int) -> None:
        if done >= 40:
            raise KeyboardInterrupt

    with pytest.raises(RefreshInterrupted) as stopped:
        mirror.refresh(concurrency=1, progress=stop_after_two_batches)
    assert stopped.value.report.checked == 40 and stopped.value.report.interrupted
    assert mirror.refresh(older_than=5).selected == 60


def test_cli_refresh_history_diff(
    upstream: Emulator, docs: list[dict], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DK_MIRROR_DB", db_url)
    monkeypatch.setenv("DK_MIRROR_UPSTREAM", upstream.base_url)
    monkeypatch.setenv("DEVELOPER_KNOWLEDGE_API_KEY", "test-key")

    def run(*args: str):  # type: ignore[no-untyped-def]
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    assert run("fetch", *_names(docs[:30])).exit_code == 0
    name = _change(upstream, docs, 12)
    result = run("refresh", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["changed"] == [name] and summary["unchanged"] == 29
    assert summary["checked"] == 30 and summary["failed"] == [] and summary["gone"] == []

    listed = json.loads(run("history", "--json", name).stdout)
    assert [v["version"] for v in listed["versions"]] == [2, 1]
    assert listed["versions"][0]["current"] and listed["versions"][0]["sha256"].startswith(
        "sha256:"
    )
    text = run("history", name).stdout
    assert "*" in text and listed["versions"][1]["sha256"][7:23] in text

    result = run("diff", name)
    assert result.exit_code == 0 and "+A new paragraph 12." in result.stdout
    old_hash = listed["versions"][1]["sha256"][7:15]
    same = run("diff", name, "--from", old_hash, "--to", "1")
    assert same.exit_code == 0 and "same content" in same.stderr
    bad = run("diff", name, "--from", "9")
    assert bad.exit_code == 2 and "no version '9'" in bad.stderr

    upstream.inject(Fault("status", status=503), times=-1)
    failed = run("refresh")
    assert failed.exit_code == 1 and "failed" in failed.stderr

    pruned = run("history", "--prune", "--keep-versions", "1", "--json")
    assert json.loads(pruned.stdout) == {"pruned": 1, "keep": 1}


def test_migration_carries_an_existing_store_forward(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    old = Store(engines.create(url))
    upgrade(old.engine, "0003")
    body = "# Old page\n\nWritten before history existed.\n"
    with old.engine.begin() as conn:
        insert_old_documents(
            conn,
            [
                {"name": "documents/a.example/x", "content": body, "fetched_at": 5.0,
                 "content_sha256": content_sha256(body), "update_time": "2026-01-01T00:00:00Z",
                 "upstream": "import old.jsonl", "title": "Old page"},
                {"name": "documents/a.example/meta", "content": None, "fetched_at": 5.0,
                 "content_sha256": None, "update_time": None, "upstream": "search",
                 "title": "Known from search"},
            ],
        )  # fmt: skip
    old.close()
    store = Store.open(url)
    try:
        assert store.revision() == SCHEMA_REVISION
        [first] = store.versions("documents/a.example/x")
        assert first == Version("documents/a.example/x", 1, content_sha256(body),
                                "2026-01-01T00:00:00Z", 5.0, "import old.jsonl", True)  # fmt: skip
        assert store.versions("documents/a.example/meta") == []
        store.put([Document("documents/a.example/x", content="# New\n", title="New")],
                  fetched_at=9.0, upstream="test")  # fmt: skip
        assert [v.number for v in store.versions("documents/a.example/x")] == [2, 1]
        restored = store.version_document("documents/a.example/x", content_sha256(body))
        assert restored is not None and restored.content == body and restored.title == "Old page"
    finally:
        store.close()


def test_a_lock_pinning_an_old_version_syncs_byte_exact_offline(
    build, upstream: Emulator, docs: list[dict], tmp_path: Path
) -> None:
    names = _names(docs[:3])
    toml = tmp_path / "dk-mirror.toml"
    toml.write_text("[docs]\nnames = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
    lock = tmp_path / "dk-mirror.lock"
    online = build()
    entries = online.lock(toml, lock)
    pinned = {e.name: e.sha256 for e in entries}
    first = docs[1]["content"]
    _change(upstream, docs, 1)
    assert online.refresh().changed == [names[1]]
    # The snapshot a lock pins is made from history: the locked bytes, not the current ones.
    snap = tmp_path / "pinned.snap"
    online.export_snapshot(snap, lock=lock)
    assert {d.name: d.content for d in Mirror.read_snapshot(snap).documents}[names[1]] == first
    online.close()

    sent = len(upstream.requests)
    offline = build(offline=True, strict_offline=True)
    report = offline.sync_locked(lock)
    assert report.mismatches == [] and report.written == 1
    got = offline.get_documents(names, offline.default_mode())
    assert [f"sha256:{content_sha256(d.content or '')}" for d in got.documents] == [
        pinned[n] for n in names
    ]
    assert got.documents[1].content == first
    assert offline.sync_locked(lock).written == 0
    offline.import_snapshot(snap)
    assert len(upstream.requests) == sent
    assert offline.history(names[1])[0].sha256 == content_sha256(first)


@pytest.mark.parametrize(
    ("stored", "length", "now", "now_length", "refetch"),
    [
        ("2026-01-01T00:00:00Z", 10, "2026-01-01T00:00:00Z", 10, False),
        ("2026-01-01T00:00:00Z", 10, "2026-01-01T00:00:00.000Z", None, False),
        ("2026-01-01T01:00:00+01:00", None, "2026-01-01T00:00:00Z", 10, False),
        ("2026-01-01T00:00:00Z", 10, "2026-01-02T00:00:00Z", 10, True),
        ("2026-01-02T00:00:00Z", 10, "2026-01-01T00:00:00Z", 10, True),
        ("2026-01-01T00:00:00Z", 10, "2026-01-01T00:00:00Z", 11, True),
        (None, 10, "2026-01-01T00:00:00Z", 10, True),
        ("2026-01-01T00:00:00Z", 10, None, 10, True),
        ("not a time", 10, "not a time", 10, True),
    ],
)
def test_refetch_needed(
    stored: str | None, length: int | None, now: str | None, now_length: int | None, refetch: bool
) -> None:
    assert refetch_needed(stored, length, now, now_length) is refetch


def _version(number: int, sha: str) -> Version:
    return Version("documents/a/b", number, sha, None, 0.0, "t")


@pytest.mark.parametrize(
    ("spec", "number"),
    [("2", 2), ("1", 1), ("abcd", 1), ("sha256:ABCD12", 1), ("ab99", 2), ("1234", 3)],
)
def test_resolve_a_version(spec: str, number: int) -> None:
    versions = [_version(3, "1234" + "0" * 60), _version(2, "ab99" + "0" * 60),
                _version(1, "abcd12" + "0" * 58)]  # fmt: skip
    assert resolve(versions, spec).number == number


@pytest.mark.parametrize("spec", ["ab", "7", "ffff", "zzzz", "sha256:"])
def test_resolve_refuses_what_names_no_single_version(spec: str) -> None:
    versions = [_version(2, "ab99" + "0" * 60), _version(1, "ab12" + "0" * 60)]
    with pytest.raises(InvalidInput):
        resolve(versions, spec)


def test_a_document_a_snapshot_tombstone_removed_is_restored_from_history(
    build, docs: list[dict], tmp_path: Path
) -> None:
    names = _names(docs[:2])
    ours = build()
    ours.fetch(names)
    base = tmp_path / "base.snap"
    ours.export_snapshot(base)
    toml = tmp_path / "dk-mirror.toml"
    toml.write_text("[docs]\nnames = [" + ", ".join(f'"{n}"' for n in names) + "]\n")
    lock = tmp_path / "dk-mirror.lock"
    ours.lock(toml, lock)
    theirs = build(db_url=f"sqlite:///{tmp_path / 'theirs.sqlite3'}")
    theirs.fetch(names[:1])
    delta = tmp_path / "delta.snap"
    theirs.export_snapshot(delta, since=base)
    assert ours.import_snapshot(delta).removed == 1
    assert ours.cached_names(names) == {names[0]}
    assert [v.number for v in ours.history(names[1])] == [1]
    report = ours.sync_locked(lock)
    assert report.mismatches == [] and report.written == 1
    got = ours.get_documents(names[1:], Mode(offline=True)).documents[0]
    assert got.content == docs[1]["content"]
