"""Copy every row of one store into another, empty one (an SQLite store into PostgreSQL).

Table by table in dependency order, streamed a batch at a time (memory holds one batch, not a
table), into ONE destination transaction: a copy that fails leaves the destination empty.
Documents, their whole history (versions and their contents), gone and missing names, crawls,
recordings and semantic vectors are copied as they are; the search index is derived from the
documents, so the destination rebuilds its own (its database may index differently).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Integer, Table, func, select, text

from ...errors import StoreError
from ..schema.tables import metadata
from . import engine as engines

if TYPE_CHECKING:
    from ..store import Store

# Rows read and inserted per round trip.
COPY_BATCH = 500
# Derived from other tables and rebuilt by the destination itself: the search index and
# SQLite's log of its changes (their shape is the database's own), and the counts SQLite's
# triggers keep as rows arrive.
DERIVED = frozenset({"search_docs", "search_changes", "document_counts"})
# Pacing state of the processes on the source store; the destination's processes start theirs.
LOCAL = frozenset({"quota_buckets"})

Progress = Callable[[str, int], None]


def copied_tables() -> list[Table]:
    """The tables a copy carries, parents before the tables that reference them."""
    return [t for t in metadata.sorted_tables if t.name not in DERIVED | LOCAL]


def copy_rows(source: Store, dest: Store, progress: Progress | None = None) -> dict[str, int]:
    """Copy every row of `source` into the empty `dest`; rows copied per table."""
    tables = copied_tables()
    counts: dict[str, int] = {}
    # One read transaction on the source: every table as of the same moment.
    with (
        source.engine.connect() as src,
        src.begin(),
        dest.engine.connect().execution_options(**{engines.WRITE: True}) as dst,
        engines.bulk_write(dst),  # before BEGIN: it sets a pragma on SQLite
        dst.begin(),
    ):
        _require_empty(dst, tables, dest.where)
        for table in tables:
            counts[table.name] = _copy_table(src, dst, table, progress)
        _advance_sequences(dst, tables)
        # PostgreSQL's index is written in this transaction; SQLite's triggers logged every
        # page copied, and its tantivy index follows that log (the first search syncs it).
        dest.text.copied(dst)
    return counts


def _require_empty(conn: Connection, tables: list[Table], where: str) -> None:
    for table in tables:
        if conn.execute(select(func.count()).select_from(table)).scalar_one():
            raise StoreError(
                f"{where} already holds {table.name} rows: a copy goes into an empty store",
                hint="create a new database (or an empty file) for the copy",
            )


def _copy_table(src: Connection, dst: Connection, table: Table, progress: Progress | None) -> int:
    query = select(table).order_by(*table.primary_key.columns)
    result = src.execution_options(yield_per=COPY_BATCH).execute(query)
    copied = 0
    for part in result.partitions():
        dst.execute(table.insert(), [row._asdict() for row in part])
        copied += len(part)
        if progress:
            progress(table.name, copied)
    return copied


def _advance_sequences(conn: Connection, tables: list[Table]) -> None:
    # PostgreSQL numbers serial keys from a sequence that rows inserted with their own ids do
    # not move: without this, the next crawl inserted would take id 1 again and collide.
    if conn.dialect.name != "postgresql":
        return
    for table in tables:
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        name, column = table.name, keys[0].name
        conn.execute(
            text(
                f"SELECT setval(pg_get_serial_sequence('{name}', '{column}'), "
                f"coalesce(max({column}), 0) + 1, false) FROM {name}"
            )
        )
