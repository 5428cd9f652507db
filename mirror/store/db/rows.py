"""Rows to and from models, and the one upsert builder every table's writes use."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ...errors import StoreError
from ...models import CachedDocument, Document, content_sha256
from .compression import deflate, inflate

if TYPE_CHECKING:
    from sqlalchemy import Table


def upsert(dialect: str, table: Table, keys: list[str]) -> Any:
    """INSERT ... ON CONFLICT (keys) DO UPDATE every other column, for SQLite or PostgreSQL."""
    stmt = dialect_insert(dialect, table)
    return stmt.on_conflict_do_update(
        index_elements=keys,
        set_={c.name: stmt.excluded[c.name] for c in table.columns if c.name not in keys},
    )


def dialect_insert(dialect: str, table: Table) -> Any:
    """The INSERT of SQLite or PostgreSQL for `table`, which knows ON CONFLICT."""
    insert: Any
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    elif dialect == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        raise StoreError(
            f"databases of type {dialect!r} are not supported",
            hint="use an SQLite path or a postgresql:// URL",
        )
    return insert(table)


def insert_missing(dialect: str, table: Table, keys: list[str]) -> Any:
    """INSERT ... ON CONFLICT (keys) DO NOTHING: rows already there are left as they are."""
    return dialect_insert(dialect, table).on_conflict_do_nothing(index_elements=keys)


# The columns document_meta fills, in the tables' order.
META_COLUMNS = ("uri", "title", "description", "data_source", "update_time",
                "content_length_bytes", "extra_json")  # fmt: skip


def document_meta(doc: Document) -> dict[str, Any]:
    """The metadata columns of `doc`, which its `documents` row and each of its versions
    (`document_versions`) hold alike."""
    return {
        "uri": doc.uri,
        "title": doc.title,
        "description": doc.description,
        "data_source": doc.data_source,
        "update_time": doc.update_time,
        "content_length_bytes": doc.content_length_bytes,
        "extra_json": json.dumps(dict(doc.extra), sort_keys=True) if doc.extra else None,
    }


def document_row(
    doc: Document, fetched_at: float, upstream: str, *, packed: bool = False
) -> dict[str, Any]:
    """The `documents` row for `doc`, as fetched at `fetched_at` from `upstream`.

    `packed`: the content already compressed as SQLite stores it, for a write that bypasses
    Core (raw executemany; a worker thread can pay for the compression then). Through Core
    leave it False: the Markdown column type compresses on SQLite, and only there.
    """
    content = doc.content
    return {
        "name": doc.name,
        **document_meta(doc),
        "content": deflate(content) if packed and content is not None else content,
        "content_sha256": content_sha256(content) if content is not None else None,
        "fetched_at": fetched_at,
        "upstream": upstream,
        "seen_update_time": None,
    }


def cached_document(row: Any) -> CachedDocument:
    """A CachedDocument from a full `documents` row, in the table's column order (its
    content compressed, as raw sqlite3 reads it, or already text)."""
    # Positional unpacking: attribute access by name on Row costs more than the query itself
    # on this hot path (20 rows per get_documents).
    (name, uri, title, description, data_source, update_time, length, content, extra_json,
     sha256, fetched_at, upstream, seen_update_time) = row  # fmt: skip
    doc = stored_document(
        name, uri, title, description, data_source, update_time, length, inflate(content),
        extra_json,
    )  # fmt: skip
    return CachedDocument(doc, sha256, fetched_at, upstream, seen_update_time)


def stored_document(
    name: str,
    uri: str | None,
    title: str | None,
    description: str | None,
    data_source: str | None,
    update_time: str | None,
    length: int | None,
    content: str | None,
    extra_json: str | None,
) -> Document:
    """The Document a stored row (of `documents` or a version) describes: document_meta's
    columns, in the tables' order, with the content as text."""
    return Document(
        name,
        uri,
        content,
        description,
        data_source,
        title,
        update_time,
        None,
        length,
        json.loads(extra_json) if extra_json else {},
    )
