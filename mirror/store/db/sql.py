"""SQL text run by both the full Store (through SQLAlchemy) and the cold-start Reader (sqlite3).

One definition of each read query, so the two paths cannot drift. No SQLAlchemy here: the
Reader imports this module on the cold path. Named parameters (`:name`) are understood by
SQLAlchemy's `text()` and by sqlite3 alike; `?` marks are for sqlite3 only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...models import Stats, Summary

# The Alembic revision the code expects; `tests/test_migrations.py` checks it is the head.
SCHEMA_REVISION = "0016"

REVISION = "SELECT version_num FROM alembic_version"
JOURNAL_MODE = "PRAGMA journal_mode"
QUICK_CHECK = "PRAGMA quick_check"

# Every column of `documents`, in the table's order (rows.cached_document unpacks by position;
# tests/test_cold_start.py checks this against the table).
DOCUMENT_COLUMNS = (
    "name",
    "uri",
    "title",
    "description",
    "data_source",
    "update_time",
    "content_length_bytes",
    "content",
    "extra_json",
    "content_sha256",
    "fetched_at",
    "upstream",
    "seen_update_time",
)
_SELECT_DOCUMENTS = f"SELECT {', '.join(DOCUMENT_COLUMNS)} FROM documents"


def by_names(count: int) -> str:
    """Full rows of `count` names (sqlite3 `?` marks; keep `count` under SQLite's 32766)."""
    return f"{_SELECT_DOCUMENTS} WHERE name IN ({', '.join('?' * count)})"


# get_documents asks for at most 20 names: one ready text per count, none built per call.
MAX_FIXED_NAMES = 20
BY_NAMES = [by_names(count) for count in range(MAX_FIXED_NAMES + 1)]

# An index range on the primary key, unlike LIKE (case rules, escapes): prefix to prefix+max.
PREFIX_END = "\U0010ffff"


def listing(*, prefix: bool, limit: bool, content_only: bool = False) -> str:
    """The `list_documents` query; binds `:lo`/`:hi` with `prefix`, `:limit` with `limit`;
    `content_only` leaves out metadata-only rows (names known from search results)."""
    conditions = (["name >= :lo AND name < :hi"] if prefix else []) + (
        ["content IS NOT NULL"] if content_only else []
    )
    return (
        "SELECT name, title, data_source, update_time, content_length_bytes, "
        "content IS NOT NULL AS has_content, fetched_at FROM documents"
        + (" WHERE " + " AND ".join(conditions) if conditions else "")
        + " ORDER BY name"
        + (" LIMIT :limit" if limit else "")
    )


def listing_params(prefix: str | None, limit: int | None) -> dict[str, Any]:
    """The parameters `listing` binds for this prefix and limit."""
    params: dict[str, Any] = {}
    if prefix:
        params.update(lo=prefix, hi=prefix + PREFIX_END)
    if limit is not None:
        params["limit"] = limit
    return params


def summary(row: Sequence[Any]) -> Summary:
    """A listing row as a Summary (`has_content` is 0/1 from sqlite3, a bool elsewhere)."""
    name, title, data_source, update_time, length, has_content, fetched_at = row
    return Summary(name, title, data_source, update_time, length, bool(has_content), fetched_at)


# The counts kept per data source by triggers (schema_counts.py): a few rows, whatever the size.
# Fetch times from the index on fetched_at: each min/max in its own subquery, since SQLite
# answers a lone min() or max() from the index but scans every row for both in one SELECT.
STATS_KEPT = (
    "SELECT data_source, documents, with_content, content_bytes FROM document_counts "
    "ORDER BY data_source"
)
STATS_FETCHED = (
    "SELECT (SELECT min(fetched_at) FROM documents), (SELECT max(fetched_at) FROM documents)"
)
# Where no trigger keeps the counts (other databases): the same rows, counted from documents.
STATS_COUNTED = (
    "SELECT coalesce(data_source, '') AS source, count(*), count(content), "
    "coalesce(sum(content_length_bytes), 0) FROM documents "
    "GROUP BY coalesce(data_source, '') ORDER BY source"
)


def stats(by_source: Sequence[Sequence[Any]], fetched: Sequence[Any]) -> Stats:
    """Stats from the rows of STATS_KEPT (or STATS_COUNTED) and the row of STATS_FETCHED.

    Per source, documents with content only: metadata-only rows (names known from search
    results) are counted apart, in the totals (documents - with_content), never as documents.
    """
    oldest, newest = fetched
    return Stats(
        documents=sum(int(row[1]) for row in by_source),
        with_content=sum(int(row[2]) for row in by_source),
        content_bytes=sum(int(row[3]) for row in by_source),
        oldest_fetch=oldest,
        newest_fetch=newest,
        # '' stands for no data source, which the listing always showed as "None".
        by_data_source={str(src or None): int(n) for src, _, n, _ in by_source if n > 0},
    )


# The log of changed pages the tantivy index follows on SQLite (schema_index.py).
CHANGE_LOG = "search_changes"
HAS_TABLE = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"
PG_HAS_COLUMN = (
    "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND table_name = :table AND column_name = :column"
)
# The semantic index's model and generation: none until `dk-mirror index update` turned it on.
SEMANTIC_STATE = "SELECT model, generation FROM semantic_state WHERE id = 1"
# The current vectors of one model (tables/vectors.py's `rows`): this model's, of the content
# as it is now, in name order.
CURRENT_VECTORS = (
    "SELECT v.name, v.vector, v.scale FROM doc_vectors v JOIN documents d ON d.name = v.name"
    " AND v.model = :key AND v.content_sha256 IS d.content_sha256 ORDER BY v.name"
)

RECORDED_PAGE = "SELECT response_json, recorded_at, upstream FROM search_pages WHERE key = :key"
RECORDED_ANSWER = (
    "SELECT answer_json, references_json, recorded_at, upstream FROM answers WHERE key = :key"
)
