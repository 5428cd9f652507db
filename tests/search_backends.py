"""Stores for the search suites on both backends, at module scope (built once, read by many).

`db_url` gives each test a fresh store on each backend; a module whose tests only read one
store built from the same documents asks `module_store_url` instead, parametrised the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

BACKENDS = ("sqlite", "postgresql")


@contextmanager
def module_store_url(request: pytest.FixtureRequest, label: str) -> Iterator[str]:
    """A fresh store URL on the backend `request.param` names (a module-scoped fixture's)."""
    if request.param == "postgresql":
        server = request.getfixturevalue("postgres_server")
        url = server.fresh_database()
        try:
            yield url
        finally:
            server.drop_database(url)
        return
    folder = request.getfixturevalue("tmp_path_factory").mktemp(label)
    yield f"sqlite:///{folder / 'store.sqlite3'}"


def index_entries(store, name: str | None = None) -> int:  # type: ignore[no-untyped-def]
    """Index entries with their words indexed (of document `name`, if given): FTS5 rows on
    SQLite, tsvectors on PostgreSQL; both joined to search_docs."""
    from sqlalchemy import text

    if store.engine.dialect.name == "postgresql":
        sql = "SELECT count(*) FROM search_docs AS s WHERE s.words IS NOT NULL"
    else:
        sql = "SELECT count(*) FROM search_docs AS s JOIN doc_fts_docsize AS f ON f.id = s.id"
    params = {}
    if name is not None:
        sql += " AND s.name = :name" if "WHERE" in sql else " WHERE s.name = :name"
        params["name"] = name
    with store.engine.connect() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def fts_rows(store) -> int:  # type: ignore[no-untyped-def]
    """Rows of the full-text index itself, whether or not search_docs still names them
    (FTS5's docsize table on SQLite; on PostgreSQL the tsvectors live in search_docs)."""
    from sqlalchemy import text

    table = "search_docs" if store.engine.dialect.name == "postgresql" else "doc_fts_docsize"
    with store.engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
