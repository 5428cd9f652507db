"""The change log: one row per change of what the store holds, appended by the write itself.

Every write path (Store._write_prepared, write/bulk.py's removals) appends here in the same
transaction as the change, so the log and the documents commit or roll back together: a
reader of the log never sees a change the documents do not hold, nor misses one they do.
"""

from __future__ import annotations

from sqlalchemy import Column, Float, Index, Integer, String, Table, Text

from .tables import NAME, metadata

change_events = Table(
    "change_events",
    metadata,
    # Stable and increasing: AUTOINCREMENT on SQLite never reuses an id, even after the
    # newest rows went; a feed reader or `changes --since ID` can resume from any id.
    Column("id", Integer, primary_key=True),
    Column("name", NAME, nullable=False),
    # Unix seconds the write observed the change (its fetch or import time).
    Column("observed_at", Float, nullable=False),
    # "added", "changed" or "removed" (mirror/changes/events.py).
    Column("kind", String(10), nullable=False),
    # Content hashes (hex sha256) before and after: None before an addition, after a removal.
    Column("old_sha256", String(64)),
    Column("new_sha256", String(64)),
    Column("old_update_time", String(40)),
    Column("new_update_time", String(40)),
    # What the change touched, as bits of mirror/changes/events.CLASS_BITS (cosmetic, text,
    # code, structure, signal); None when not classified (events derived at upgrade).
    Column("classes", Integer),
    # One line a reader can scan: "deprecation notice added; code sample changed".
    Column("summary", Text),
    sqlite_autoincrement=True,
)
# A prefix (a data source, a section) answered newest first without scanning the whole log.
Index("ix_change_events_name_id", change_events.c.name, change_events.c.id)
# `--since DATE` finds its first event by time.
Index("ix_change_events_observed_at", change_events.c.observed_at)
