"""Quota buckets kept in the store, so every dk-mirror process on one store paces together.

The store only keeps the rows and runs each change atomically; what a change does (the
bucket rule) is passed in by the caller (mirror/service/pacing.py), so this module knows
nothing of pacing. One change is a short write transaction: SQLite takes the write lock up
front (BEGIN IMMEDIATE, see engine.py); PostgreSQL locks the row (SELECT ... FOR UPDATE).
The caller sleeps afterwards, outside any transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection, Engine, bindparam, select, update

from ...models import BucketState
from ..db import turns
from ..db.rows import insert_missing
from ..schema.recordings import quota_buckets

T = TypeVar("T")

# What a change sees and returns: the bucket's state (EMPTY if never used) and the time, read
# once the row is locked; the new state and whatever the caller wants back.
Step = Callable[[BucketState, float], tuple[BucketState, T]]
# A bucket no call has used: its TAT long past, at the full rate.
EMPTY = BucketState(tat=0.0)


class Buckets:
    """Rows of `quota_buckets`, changed one locked read-modify-write at a time."""

    def __init__(self, engine: Engine, writer: Callable[[], Connection]) -> None:
        self.engine = engine
        self._writer = writer
        # INSERT ... ON CONFLICT DO NOTHING for the bucket's key (db/ speaks each dialect).
        self._insert = insert_missing(engine.dialect.name, quota_buckets, ["upstream", "bucket"])
        t = quota_buckets.c
        # Parameter names differ from the columns': an UPDATE reserves those for its SET.
        this = (t.upstream == bindparam("at_upstream"), t.bucket == bindparam("at_bucket"))
        # PostgreSQL: lock the row; SQLite: BEGIN IMMEDIATE locked the database already.
        self._row = select(t.tat, t.rate_factor, t.slowed_at).where(*this).with_for_update()
        self._update = (
            update(quota_buckets)
            .where(*this)
            .values(
                tat=bindparam("new_tat"),
                rate_factor=bindparam("new_rate_factor"),
                slowed_at=bindparam("new_slowed_at"),
            )
        )

    def change(self, upstream: str, bucket: str, step: Step[T], clock: Callable[[], float]) -> T:
        """Run `step` on the bucket's state inside one write transaction; return its result.

        `clock` is read after the lock is held, so a caller that waited for the lock decides
        on the time it actually got it.
        """
        key = {"at_upstream": upstream, "at_bucket": bucket}
        # Run again when PostgreSQL rolls it back for colliding with another writer.
        result: T = turns.retrying()(self._change, key, step, clock)
        return result

    def _change(self, key: dict[str, str], step: Step[T], clock: Callable[[], float]) -> T:
        upstream, bucket = key["at_upstream"], key["at_bucket"]
        with self._writer() as conn, conn.begin():
            found = conn.execute(self._row, key).first()
            if found is None:
                # A first use: an empty bucket, then read back under the lock. On PostgreSQL
                # two first users may race; the second insert waits for the first to commit,
                # does nothing, and the select then sees (and locks) the first one's row.
                conn.execute(
                    self._insert,
                    {"upstream": upstream, "bucket": bucket, **_columns(EMPTY)},
                )
                found = conn.execute(self._row, key).one()
            now = clock()
            new, result = step(BucketState(*found), now)
            conn.execute(self._update, {**key, **{f"new_{k}": v for k, v in _columns(new).items()}})
            return result

    def get(self, upstream: str, bucket: str) -> BucketState | None:
        """The bucket's state as stored (None if no process has used it yet)."""
        t = quota_buckets.c
        with self.engine.connect() as conn:
            found = conn.execute(
                select(t.tat, t.rate_factor, t.slowed_at).where(
                    t.upstream == upstream, t.bucket == bucket
                )
            ).first()
        return None if found is None else BucketState(*found)


def _columns(state: BucketState) -> dict[str, float]:
    return {"tat": state.tat, "rate_factor": state.factor, "slowed_at": state.slowed_at}
