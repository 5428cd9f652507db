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
    """Index entries with their words indexed (of document `name`, if given): pages in the
    tantivy index on SQLite (synced with the store first, as a search does), tsvectors in
    search_docs on PostgreSQL."""
    from sqlalchemy import text

    if store.engine.dialect.name != "postgresql":
        return _tantivy_entries(store, name)
    sql = "SELECT count(*) FROM search_docs AS s WHERE s.words IS NOT NULL"
    params = {}
    if name is not None:
        sql += " AND s.name = :name"
        params["name"] = name
    with store.engine.connect() as conn:
        return int(conn.execute(text(sql), params).scalar_one())


def _tantivy_entries(store, name: str | None) -> int:  # type: ignore[no-untyped-def]
    import tantivy

    index = store.text_index()
    with store.engine.connect() as conn, conn.begin():
        searcher = index.searcher(conn.connection.driver_connection)
        if name is None:
            return int(searcher.num_docs)
        query = tantivy.Query.term_query(index.schema, "name", name)
        return len(searcher.search(query, 10))
