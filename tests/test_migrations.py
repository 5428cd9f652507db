"""Migrations from a blank database give exactly the schema the code expects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, MetaData, column, create_engine, inspect, table

from mirror.store.db import engine as engines
from mirror.store.db.migrate import known_revisions, upgrade
from mirror.store.schema import counts as schema_counts
from mirror.store.schema import index as schema_index
from mirror.store.schema.tables import SCHEMA_REVISION, documents, metadata
from mirror.store.store import Store


def _shape(url: str) -> dict[str, list[object]]:
    engine = create_engine(url)
    try:
        reflected = MetaData()
        reflected.reflect(engine)
        insp = inspect(engine)
        out: dict[str, list[object]] = {}
        for table in reflected.sorted_tables:
            pk = set(insp.get_pk_constraint(table.name)["constrained_columns"])
            out[table.name] = [
                (c.name, str(c.type), getattr(c.type, "collation", None), bool(c.nullable),
                 c.name in pk)
                for c in table.columns
            ]  # fmt: skip
            indexes = [
                (i["name"], tuple(i["column_names"]), bool(i["unique"]))
                for i in insp.get_indexes(table.name)
            ]
            uniques = [
                (u["name"], tuple(u["column_names"]))
                for u in insp.get_unique_constraints(table.name)
            ]
            foreign = [
                (f["name"], tuple(f["constrained_columns"]), f["referred_table"],
                 tuple(f["referred_columns"]), f["options"].get("ondelete"))
                for f in insp.get_foreign_keys(table.name)
            ]  # fmt: skip
            # repr: unnamed constraints reflect with name None, which does not sort with str.
            out[table.name] += sorted([*indexes, *uniques, *foreign], key=repr)
        return out
    finally:
        engine.dispose()


def _sqlite_objects(url: str) -> dict[str, str]:
    """SQL of what reflection cannot compare: FTS5 virtual tables (their tokenizer), views and
    triggers. Their shadow tables (doc_fts_data, ...) are compared by `_shape`."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "SELECT name, sql FROM sqlite_master WHERE type IN ('trigger', 'view') "
                "OR (type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%')"
            ).all()
        return {name: " ".join(sql.split()) for name, sql in rows}
    finally:
        engine.dispose()


def test_code_expects_the_newest_migration() -> None:
    assert known_revisions()[-1] == SCHEMA_REVISION


def test_blank_database_migrates_to_the_code_schema(tmp_path: Path) -> None:
    migrated = f"sqlite:///{tmp_path / 'migrated.sqlite3'}"
    Store.open(migrated).close()
    direct = f"sqlite:///{tmp_path / 'direct.sqlite3'}"
    engine = create_engine(direct)
    metadata.create_all(engine)
    engine.dispose()
    got = _shape(migrated)
    assert got.pop("alembic_version")
    assert got == _shape(direct)
    objects = _sqlite_objects(migrated)
    assert set(objects) == {*schema_index.TRIGGERS, *schema_counts.TRIGGERS}
    assert objects == _sqlite_objects(direct)


def test_blank_postgresql_database_migrates_to_the_code_schema(postgres_server) -> None:  # type: ignore[no-untyped-def]
    migrated = postgres_server.fresh_database(migrated=False)
    direct = postgres_server.fresh_database(migrated=False)
    try:
        store = Store.open(migrated)  # blank -> head
        assert store.revision() == SCHEMA_REVISION
        store.close()
        engine = create_engine(direct)
        metadata.create_all(engine)
        engine.dispose()
        got = _shape(migrated)
        assert got.pop("alembic_version")
        assert got == _shape(direct)
        # Document names compare by code point whatever the server's locale (migration 0010).
        assert ("name", 'VARCHAR(500) COLLATE "C"', "C", False, True) in got["documents"]
    finally:
        for url in (migrated, direct):
            postgres_server.drop_database(url)


def insert_old_documents(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Write `rows` into `documents` as a store before revision 0012 held them: the Markdown
    as plain TEXT (the current table's Markdown type would compress it)."""
    old = table("documents", *(column(key) for key in rows[0]))
    conn.execute(old.insert(), rows)


def insert_two_documents(store: Store) -> None:
    """A page with content and a metadata-only row, written straight into `documents` (as a
    store at an older revision holds them, before a search migration indexes them)."""
    with store.engine.begin() as conn:
        insert_old_documents(
            conn,
            [
                {"name": "documents/a.example/x", "title": "Walrus care", "content":
                 "# Walrus care\n\nFeed the walrus fish.", "fetched_at": 0.0, "upstream": "t"},
                {"name": "documents/a.example/y", "title": "Metadata only", "content": None,
                 "fetched_at": 0.0, "upstream": "t"},
            ],
        )  # fmt: skip


def test_search_index_migration_backfills_stored_documents(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    store = Store(engines.create(url))
    upgrade(store.engine, "0001")
    insert_two_documents(store)
    store.close()
    store = Store.open(url)
    try:
        assert store.revision() == SCHEMA_REVISION
        hits = store.search_local("walrus fish")
        assert [(h.name, h.chunk_id, h.text) for h in hits] == [
            ("documents/a.example/x", "c0", "# Walrus care\n\nFeed the walrus fish.")
        ]
    finally:
        store.close()


@pytest.mark.slow
def test_reopening_does_not_migrate_again(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    Store.open(url).close()
    code = "import sys, mirror.store.store as s; s.Store.open(sys.argv[1]).close(); print('alembic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code, url], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"  # an up-to-date store never imports Alembic


def test_counts_migration_counts_stored_documents(tmp_path: Path) -> None:
    # A store written before the counts were kept: the migration must count what it holds.
    url = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    store = Store(engines.create(url))
    upgrade(store.engine, "0003")
    rows = [
        {"name": f"documents/a.example/{i}", "data_source": "a.example", "content": "# A",
         "content_length_bytes": 3, "fetched_at": float(i), "upstream": "t"}
        for i in range(5)
    ] + [
        {"name": "documents/b.example/x", "data_source": "b.example", "content": "# Bee",
         "content_length_bytes": 5, "fetched_at": 50.0, "upstream": "t"},
        {"name": "documents/b.example/meta", "data_source": "b.example", "content": None,
         "content_length_bytes": 7, "fetched_at": 2.0, "upstream": "t"},
        {"name": "documents/c.example/meta", "data_source": "c.example", "content": None,
         "content_length_bytes": None,
         "fetched_at": 9.0, "upstream": "t"},
    ]  # fmt: skip
    with store.engine.begin() as conn:
        insert_old_documents(conn, rows)
    store.close()
    store = Store.open(url)
    try:
        stats = store.stats()
        assert (stats.documents, stats.with_content, stats.content_bytes) == (8, 6, 27)
        assert (stats.oldest_fetch, stats.newest_fetch) == (0.0, 50.0)
        assert stats.by_data_source == {"a.example": 5, "b.example": 1}
        # From here on the triggers keep them: a delete after the migration is counted too.
        with store.engine.begin() as conn:
            conn.execute(documents.delete().where(documents.c.name == "documents/b.example/x"))
        stats = store.stats()
        assert (stats.documents, stats.with_content, stats.content_bytes) == (7, 5, 22)
        assert stats.by_data_source == {"a.example": 5}
    finally:
        store.close()


def test_a_checkout_migrates_with_its_own_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a checkout, the store upgrades with the checkout's own migrations/, never with
    the `mirror.migrations` an editable install of another checkout maps elsewhere."""
    import importlib

    from mirror.store.db import migrate

    real = importlib.import_module

    def no_packaged(name: str, *args: Any) -> Any:
        assert name != "mirror.migrations", "took the packaged migrations, not the checkout's"
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", no_packaged)
    root = Path(__file__).resolve().parents[1]
    assert migrate.script_location() == root / "migrations"
