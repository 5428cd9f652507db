"""Markdown kept zlib-compressed in SQLite: one place that packs and unpacks it.

On SQLite `documents.content` and `version_contents.content` hold a document's Markdown as a
BLOB of zlib data (typeof 'blob'); a TEXT value there is plain Markdown (a store written before
migration 0012, or by hand) and reads back as it is. PostgreSQL keeps plain text: TOAST
compresses large values already. `content_sha256` and `content_length_bytes` always describe
the uncompressed text.

SQL that needs the text inside SQLite (the FTS5 content view `search_content` and the triggers
that hand FTS5 the old text to forget) calls `dk_inflate(content)`, which every connection the
project opens registers (engine.py, reader.py). A connection without it (the sqlite3 shell)
fails on those statements with "no such function: dk_inflate" instead of corrupting the index.

No SQLAlchemy here: the cold-start Reader imports this module.
"""

from __future__ import annotations

import sqlite3
import zlib

from ...errors import StoreError

# zlib's fastest level: on the pages measured it packs within 6% of level 6 (0.52 vs 0.49
# of the Markdown bytes) at a fraction of the cost, and import compresses every page it writes.
LEVEL = 1
# The SQL function name the view and triggers call.
INFLATE_SQL = "dk_inflate"


def deflate(text: str) -> bytes:
    """The stored form of `text` on SQLite (zlib format: a header and an Adler-32 check, so
    damage is detected; the sqlite3 shell's sqlar_uncompress reads it too)."""
    return zlib.compress(text.encode("utf-8"), LEVEL)


def inflate(value: str | bytes | None) -> str | None:
    """The Markdown a stored value holds: BLOBs are unpacked, text and NULL pass through."""
    if not isinstance(value, bytes):
        return value
    try:
        return zlib.decompress(value).decode("utf-8")
    except (zlib.error, UnicodeDecodeError):
        raise StoreError(
            "a document's stored Markdown cannot be decompressed: the store is damaged",
            hint="run `dk-mirror doctor`; fetch the document again or restore a snapshot",
        ) from None


def register(conn: sqlite3.Connection) -> None:
    """Make `dk_inflate(value)` available to SQL on the sqlite3 connection `conn`."""
    # deterministic: SQLite may then use it in views, indexes and triggers' WHEN clauses.
    try:
        conn.create_function(INFLATE_SQL, 1, inflate, deterministic=True)
    except sqlite3.OperationalError:
        # Registered already (every connection of the project registers it when it opens),
        # and SQLite refuses to redefine a function while a virtual table on the connection
        # holds prepared statements (FTS5's, in migration 0013's downgrade).
        if (
            conn.execute(
                f"SELECT 1 FROM pragma_function_list WHERE name = '{INFLATE_SQL}'"
            ).fetchone()
            is None
        ):
            raise
