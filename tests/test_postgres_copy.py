"""Snapshots are backend-independent, and `dk-mirror db copy` moves a store into PostgreSQL
with every document and version, verified by the snapshot roots of both."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from mirror.cli.main import cli
from mirror.config import Settings
from mirror.models import Document
from mirror.service import Mirror
from mirror.store.store import Store
from tests.emulator_fixtures import corpus_documents

# Names whose order differs between code points and a natural-language collation (case,
# punctuation, accents): the snapshot order must be Python's on both backends.
AWKWARD = ["B", "a", "a-b", "a_b", "a.b", "Z", "é", "e", "ß", "批处理", "a/b", "a~b"]


def documents() -> list[Document]:
    """Real pages, plus pages named to sort differently under a locale's collation."""
    docs = [Document.from_api(d) for d in corpus_documents("tensorflow.org")[:40]]
    for i, tail in enumerate(AWKWARD):
        docs.append(
            Document.from_api(
                {
                    "name": f"documents/example.dev/{tail}",
                    "title": f"Awkward {tail}",
                    "content": f"# Awkward {i}\n\nBody of {tail!r}: naïve café 🙂\n",
                    "updateTime": "2026-01-02T03:04:05.123456Z",
                }
            )
        )
    return docs


def _export(url: str, out: Path) -> bytes:
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        mirror.export_snapshot(out)
    return out.read_bytes()


def _fill(url: str, docs: list[Document]) -> None:
    """The same writes on any backend: two fetches, the second changing a few documents."""
    store = Store.open(url)
    try:
        store.put(docs, fetched_at=1_700_000_000.25, upstream="rest http://up.test")
        changed = [
            Document.from_api({**d.to_api(), "content": (d.content or "") + "\nEdited.\n"})
            for d in docs[::7]
        ]
        store.put(changed, fetched_at=1_700_086_400.5, upstream="rest http://up.test")
        store.mark_gone([docs[3].name], 1_700_090_000.0)
    finally:
        store.close()


def test_the_same_documents_export_identical_snapshot_bytes_from_sqlite_and_postgresql(
    pg_url: str, tmp_path: Path
) -> None:
    docs = documents()
    sqlite_url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    _fill(sqlite_url, docs)
    _fill(pg_url, docs)
    from_sqlite = _export(sqlite_url, tmp_path / "sqlite.dkmirror")
    from_pg = _export(pg_url, tmp_path / "pg.dkmirror")
    assert len(from_sqlite) > 10_000
    assert from_pg == from_sqlite


def _history(url: str) -> dict[str, list[dict[str, Any]]]:
    store = Store.open(url)
    try:
        names = [s.name for s in store.list_documents()]
        return {name: [v.to_json() for v in store.versions(name)] for name in names}
    finally:
        store.close()


def _copy(source: str, dest: str) -> Any:
    return CliRunner().invoke(cli, ["--db", source, "db", "copy", dest, "--json"])


def test_db_copy_moves_every_document_and_version_into_postgresql(
    pg_url: str, tmp_path: Path
) -> None:
    docs = documents()
    sqlite_url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    _fill(sqlite_url, docs)
    history = _history(sqlite_url)
    assert sum(len(v) for v in history.values()) > len(docs)  # some have two versions

    copied = _copy(sqlite_url, pg_url)
    assert copied.exit_code == 0, copied.output
    report = json.loads(copied.stdout)
    assert report["documents"] == len(docs)
    assert report["versions"] == sum(len(v) for v in history.values())
    assert _history(pg_url) == history
    # The root the command verified is the root of the snapshots both stores export.
    snap = tmp_path / "from-pg.dkmirror"
    assert _export(pg_url, snap) == _export(sqlite_url, tmp_path / "from-sqlite.dkmirror")
    with Mirror(Settings(db_url=pg_url, offline=True)) as mirror:
        verified = mirror.verify_snapshot(snap)
        assert verified.ok and verified.manifest is not None
        assert verified.manifest.root == report["root"]

    # Into a store that holds documents: refused, and nothing changes.
    again = _copy(sqlite_url, pg_url)
    assert again.exit_code == 1 and "already holds" in again.output
    assert _history(pg_url) == history

    # The copy is a working store: a new crawl gets a fresh id (serial sequences moved on).
    store = Store.open(pg_url)
    try:
        first = store.crawls.begin("k1", "{}", [docs[0].name], now=1.0, max_docs=None)
        second = store.crawls.begin("k2", "{}", [docs[1].name], now=2.0, max_docs=None)
        assert first.id != second.id
    finally:
        store.close()

    # And back into SQLite: the destination builds its own search index for the documents.
    back = f"sqlite:///{tmp_path / 'back.sqlite3'}"
    assert _copy(pg_url, back).exit_code == 0
    assert _history(back) == history
    restored = Store.open(back)
    try:
        state = restored.check_index()
        assert state.documents == len(docs) and not state.stale
    finally:
        restored.close()
