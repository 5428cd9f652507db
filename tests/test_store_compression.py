"""The Markdown is stored zlib-compressed on SQLite: every reader gets the exact text back, the
search index stays consistent through inserts, updates and deletes, a store written before
revision 0012 (plain TEXT rows) is rewritten compressed by its migration, and the file stays
small (real SQLite files throughout)."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.models import Document, content_sha256
from mirror.service import Mirror
from mirror.store.db import compression, sql
from mirror.store.db import engine as engines
from mirror.store.db.migrate import upgrade
from mirror.store.db.rows import document_row
from mirror.store.reader import Reader
from mirror.store.schema.tables import documents
from mirror.store.store import Store
from tests.emulator_fixtures import corpus_documents
from tests.test_migrations import insert_old_documents

HOST = "documents/example.dev"
# ASCII, non-ASCII (accents, CJK, emoji, a NUL-free control), empty, and multi-MB.
TEXTS = {
    f"{HOST}/ascii": "# Walrus care\n\nFeed the walrus fish.\n",
    f"{HOST}/unicode": "# Café naïve\n\n批处理 バッチ処理 🙂 Ünïcödé\twith\ttabs\r\nand CRLF\n",
    f"{HOST}/empty": "",
    f"{HOST}/large": "# Large\n\n"
    + "".join(f"Line {i}: the quick zebra {i * 7919 % 10007} jumps.\n" for i in range(80_000)),
}


def _doc(name: str, content: str, title: str = "Title") -> Document:
    return Document(name, f"https://example.dev/{name}", content, "A description", "example.dev",
                    title, "2026-01-02T03:04:05Z")  # fmt: skip


def _url(path: Path) -> str:
    return f"sqlite:///{path}"


def _raw(path: Path) -> sqlite3.Connection:
    """A plain sqlite3 connection, as the sqlite3 shell has it (no dk_inflate)."""
    return sqlite3.connect(path)


def _stored_types(path: Path) -> dict[str, set[str]]:
    with _raw(path) as conn:
        return {
            table: {t for (t,) in conn.execute(f"SELECT DISTINCT typeof(content) FROM {table}")}
            for table in ("documents", "version_contents")
        }


def _consistent(store: Store) -> None:
    """The index holds every change the store logged, no entry of a page it lacks, and every
    document with text."""
    state = store.check_index()
    assert state.consistent and state.orphans == 0
    texts = store.get_many([s.name for s in store.list_documents()])
    assert state.indexed >= sum(1 for cached in texts.values() if cached.document.content)


def test_every_reader_returns_the_exact_text(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    try:
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
        got = store.get_many(list(TEXTS))
        assert {n: c.document.content for n, c in got.items()} == TEXTS
        assert {d.name: d.content for d in store.iter_documents()} == TEXTS
        # The stored hash and length are the text's, not the compressed bytes'.
        assert got[f"{HOST}/unicode"].sha256 == content_sha256(TEXTS[f"{HOST}/unicode"])
        # History: the superseded text comes back from version_contents.
        store.put([_doc(n, t + "Edited.\n") for n, t in TEXTS.items()], fetched_at=2.0,
                  upstream="t")  # fmt: skip
        for name, text in TEXTS.items():
            first = store.versions(name)[-1]
            old = store.version_document(name, first.sha256)
            assert old is not None and old.content == text
    finally:
        store.close()
    assert _stored_types(db) == {"documents": {"blob"}, "version_contents": {"blob"}}
    reader = Reader.open(_url(db))
    assert reader is not None
    try:
        got = reader.get_many(list(TEXTS))
        assert {n: c.document.content for n, c in got.items()} == {
            n: t + "Edited.\n" for n, t in TEXTS.items()
        }
        assert [h.name for h in reader.search_local("zebra jumps", limit=1)] == [f"{HOST}/large"]
    finally:
        reader.close()


def test_rows_packed_ahead_of_the_write_read_back_as_text(tmp_path: Path) -> None:
    # A raw executemany (no Core, so no Markdown type) writes rows packed by document_row;
    # handed to Core, packed content is not packed twice.
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    rows = [document_row(_doc(n, t), 1.0, "t", packed=True) for n, t in TEXTS.items()]
    columns = ", ".join(sql.DOCUMENT_COLUMNS)
    marks = ", ".join("?" * len(sql.DOCUMENT_COLUMNS))
    try:
        with store.engine.begin() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.executemany(
                f"INSERT INTO documents ({columns}) VALUES ({marks})",
                [tuple(row[c] for c in sql.DOCUMENT_COLUMNS) for row in rows[:2]],
            )
            conn.execute(documents.insert(), rows[2:])
        assert {n: c.document.content for n, c in store.get_many(list(TEXTS)).items()} == TEXTS
        assert {d.name: d.content for d in store.iter_documents()} == TEXTS
    finally:
        store.close()
    assert _stored_types(db)["documents"] == {"blob"}


def test_exports_are_the_bytes_of_a_plain_text_store(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    url = _url(db)
    store = Store.open(url)
    try:
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
    finally:
        store.close()
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        mirror.export_snapshot(tmp_path / "packed.dkmirror")
        mirror.export_markdown(tmp_path / "md")
    # The same rows as revision 0011 stored them: plain TEXT (the hashes do not change, so the
    # FTS triggers leave the index alone).
    with _raw(db) as conn:
        compression.register(conn)  # the triggers are compiled with the UPDATE
        conn.execute("UPDATE documents SET content = dk_inflate(content)")
    assert _stored_types(db)["documents"] == {"text"}
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        mirror.export_snapshot(tmp_path / "plain.dkmirror")
    packed = (tmp_path / "packed.dkmirror").read_bytes()
    assert packed == (tmp_path / "plain.dkmirror").read_bytes()
    assert len(packed) > 100_000  # the multi-MB page is in it
    for name, text in TEXTS.items():
        written = (tmp_path / "md" / f"{name.removeprefix('documents/')}.md").read_bytes().decode()
        assert written.endswith(text)


def test_the_index_stays_consistent_through_inserts_updates_and_deletes(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    try:
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
        _consistent(store)
        assert [h.name for h in store.search_local("walrus")] == [f"{HOST}/ascii"]
        # New text: the trigger hands FTS5 the old (decompressed) text to forget.
        store.put([_doc(f"{HOST}/ascii", "# Narwhal care\n\nFeed the narwhal squid.\n")],
                  fetched_at=2.0, upstream="t")  # fmt: skip
        _consistent(store)
        assert store.search_local("walrus") == []
        assert [h.name for h in store.search_local("narwhal squid")] == [f"{HOST}/ascii"]
        # A new title with the same text.
        store.put([_doc(f"{HOST}/unicode", TEXTS[f"{HOST}/unicode"], "Kayak")], fetched_at=3.0,
                  upstream="t")  # fmt: skip
        _consistent(store)
        assert [h.name for h in store.search_local("kayak")] == [f"{HOST}/unicode"]
        # Deletes through SQL, as a gone page is removed: the delete trigger forgets it.
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM documents WHERE name = '{HOST}/large'")
        _consistent(store)
        assert store.search_local("zebra") == []
    finally:
        store.close()


def test_the_same_text_packed_differently_keeps_its_index_entry(tmp_path: Path) -> None:
    # Another zlib build (or level) packs the same text into other bytes: a re-put of the
    # unchanged page must neither drop its entry nor leave a stale one.
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    try:
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
        with store.engine.begin() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            raw.create_function("repack", 1, lambda b: zlib.compress(zlib.decompress(b), 9))
            raw.execute("UPDATE documents SET content = repack(content)")
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=2.0, upstream="t")
        _consistent(store)
        assert [h.name for h in store.search_local("walrus")] == [f"{HOST}/ascii"]
        assert {h.name for h in store.search_local("zebra")} == {f"{HOST}/large"}
    finally:
        store.close()


def test_a_shell_without_dk_inflate_cannot_hide_a_change_from_the_index(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
    store.close()
    with _raw(db) as conn:
        # The change trigger compares texts through dk_inflate (a new text under the old hash
        # is a change only the text can show), so SQLite refuses to compile any such UPDATE.
        for statement in (
            "UPDATE documents SET title = 'Other'",
            "UPDATE documents SET content = 'plain'",
        ):
            with pytest.raises(sqlite3.OperationalError, match="dk_inflate"):
                conn.execute(statement)
        # A delete is logged like any write: the index follows.
        conn.execute(f"DELETE FROM documents WHERE name = '{HOST}/large'")
    store = Store.open(_url(db))
    try:
        assert len(store.get_many(list(TEXTS))) == len(TEXTS) - 1
        assert [h.name for h in store.search_local("walrus")] == [f"{HOST}/ascii"]
        assert store.search_local("zebra") == []
        _consistent(store)
    finally:
        store.close()


def test_a_store_written_before_0012_is_compressed_by_the_migration(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite3"
    url = _url(db)
    store = Store(engines.create(url))
    upgrade(store.engine, "0011")
    with store.engine.begin() as conn:
        insert_old_documents(
            conn,
            [
                {"name": n, "title": "Title", "description": "d", "content": t,
                 "content_sha256": content_sha256(t), "fetched_at": 1.0, "upstream": "t"}
                for n, t in TEXTS.items()
            ],
        )  # fmt: skip
        # A superseded version, as revision 0006 keeps it.
        conn.exec_driver_sql(
            "INSERT INTO version_contents (sha256, content) VALUES ('ab', 'Older walrus text')"
        )
    _fill_fts5(store)  # as 0007's backfill indexes TEXT rows
    store.close()
    assert _stored_types(db) == {"documents": {"text"}, "version_contents": {"text"}}

    store = Store.open(url)  # migrates to 0012
    try:
        assert _stored_types(db) == {"documents": {"blob"}, "version_contents": {"blob"}}
        got = store.get_many(list(TEXTS))
        assert {n: c.document.content for n, c in got.items()} == TEXTS
        _consistent(store)  # 0013 then dropped FTS5; the tantivy index is built from the text
        assert [h.name for h in store.search_local("walrus fish")] == [f"{HOST}/ascii"]
        store.put([_doc(f"{HOST}/ascii", "# Seal\n\nSeals eat herring.\n")], fetched_at=2.0,
                  upstream="t")  # fmt: skip
        with store.engine.begin() as conn:
            conn.exec_driver_sql(f"DELETE FROM documents WHERE name = '{HOST}/unicode'")
        _consistent(store)
        assert [h.name for h in store.search_local("herring")] == [f"{HOST}/ascii"]
        assert store.search_local("walrus") == [] and store.search_local("kayak") == []
    finally:
        store.close()
    with _raw(db) as conn:
        (older,) = conn.execute(
            "SELECT content FROM version_contents WHERE sha256 = 'ab'"
        ).fetchone()
    assert zlib.decompress(older) == b"Older walrus text"


def _fill_fts5(store: Store) -> None:
    """Index the stored TEXT rows in revision 0011's FTS5 tables, as its migrations did."""
    from mirror.search.chunking import headings
    from mirror.search.lexical import side_text

    with store.engine.begin() as conn:
        rows = conn.exec_driver_sql("SELECT name, title, content FROM documents").all()
        conn.exec_driver_sql(
            "INSERT INTO search_docs (name, headings, side) VALUES (?, ?, ?)",
            [(n, headings(c), side_text(t, c)) for n, t, c in rows],
        )
        for table in ("doc_fts", "head_fts"):
            conn.exec_driver_sql(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")


def test_the_store_file_is_smaller_than_the_markdown(tmp_path: Path) -> None:
    # Real pages: stored plain, the documents alone took their Markdown's bytes and the file
    # with its search index 1.78 times that here; compressed, 0.38 and 1.17.
    docs = [Document.from_api(d) for d in corpus_documents("tensorflow.org")[:300]]
    markdown = sum(len((d.content or "").encode()) for d in docs)
    assert markdown > 1_000_000
    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    try:
        store.put(docs, fetched_at=1.0, upstream="t")
    finally:
        store.close()
    with _raw(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (stored,) = conn.execute("SELECT sum(length(content)) FROM documents").fetchone()
    assert stored < 0.5 * markdown
    assert db.stat().st_size < 1.4 * markdown  # 1.17 compressed, 1.78 plain (300 pages)


def test_the_downgrade_stores_plain_text_again(tmp_path: Path) -> None:
    from alembic import command

    from mirror.store.db.migrate import _config

    db = tmp_path / "store.sqlite3"
    store = Store.open(_url(db))
    try:
        store.put([_doc(n, t) for n, t in TEXTS.items()], fetched_at=1.0, upstream="t")
        writer = store.engine.connect().execution_options(**{engines.WRITE: True})
        with writer as conn, conn.begin():
            command.downgrade(_config(conn), "0011")
    finally:
        store.close()
    assert _stored_types(db)["documents"] == {"text"}
    with _raw(db) as conn:  # revision 0011's index reads the text without dk_inflate
        assert dict(conn.execute("SELECT name, content FROM documents")) == TEXTS
        conn.execute("INSERT INTO doc_fts (doc_fts, rank) VALUES ('integrity-check', 1)")
    store = Store.open(_url(db))  # and up again
    try:
        assert _stored_types(db)["documents"] == {"blob"}
        _consistent(store)
    finally:
        store.close()
