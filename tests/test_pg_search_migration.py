"""Migration 0011 on PostgreSQL: the search objects the code expects, and an existing store's
documents indexed by the upgrade (on SQLite the revision does nothing: FTS5 is its index)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text

from mirror.store.db import engine as engines
from mirror.store.db.migrate import upgrade
from mirror.store.schema.tables import SCHEMA_REVISION, metadata
from mirror.store.store import Store
from tests.test_migrations import _shape, insert_two_documents


@pytest.fixture
def blank_pg(postgres_server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """A blank (unmigrated) PostgreSQL database."""
    url = postgres_server.fresh_database(migrated=False)
    yield url
    postgres_server.drop_database(url)


def _objects(url: str) -> set[tuple[str, ...]]:
    """The triggers and functions of the public schema (reflection compares the rest)."""
    engine = engines.create(url)
    try:
        with engine.connect() as conn:
            triggers = conn.execute(
                text("SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal")
            ).all()
            functions = conn.execute(
                text(
                    "SELECT 'function', p.proname FROM pg_proc AS p JOIN pg_namespace AS n "
                    "ON n.oid = p.pronamespace WHERE n.nspname = 'public'"
                )
            ).all()
        return {tuple(row) for row in [*triggers, *functions]}
    finally:
        engine.dispose()


def test_migrations_and_metadata_build_the_same_search_objects(  # type: ignore[no-untyped-def]
    postgres_server, blank_pg: str
) -> None:
    migrated = postgres_server.fresh_database(migrated=False)
    try:
        Store.open(migrated).close()
        direct = engines.create(blank_pg)
        metadata.create_all(direct)
        direct.dispose()
        got = _shape(migrated)
        assert got.pop("alembic_version")
        assert got == _shape(blank_pg)
        shapes = [row for row in got["search_docs"] if isinstance(row, tuple)]
        types = {row[0]: row[1] for row in shapes if row[0] in ("words", "head_words")}
        assert types == {"words": "TSVECTOR", "head_words": "TSVECTOR"}
        gin = {row[0] for row in shapes if str(row[0]).startswith("ix_search_docs_")}
        assert gin == {"ix_search_docs_words", "ix_search_docs_head_words"}
        assert ("trigger", "search_docs_forget_changed") in _objects(migrated)
        assert _objects(migrated) == _objects(blank_pg)
    finally:
        postgres_server.drop_database(migrated)


def test_the_upgrade_indexes_documents_stored_before_it(blank_pg: str) -> None:
    store = Store(engines.create(blank_pg))
    upgrade(store.engine, "0009")
    insert_two_documents(store)
    assert not store.has_search_index()  # no index behind search_docs before 0011
    store.close()
    store = Store.open(blank_pg)
    try:
        assert store.revision() == SCHEMA_REVISION and store.has_search_index()
        hits = store.search_local("walrus fishes")
        assert [(h.name, h.chunk_id) for h in hits] == [("documents/a.example/x", "c0")]
        state = store.check_index()
        assert not state.stale and state.indexed == state.documents == 1
    finally:
        store.close()
