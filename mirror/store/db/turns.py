"""Writers taking turns on one store: the order PostgreSQL writers lock pages in, and the
retry of a write PostgreSQL rolled back for colliding with another.

SQLite has one writer at a time (BEGIN IMMEDIATE, engine.py), so none of this applies there.
On PostgreSQL every writer runs at once, and two that write the same pages in different
orders deadlock; two that write a page new to both race for its first version number. So:

- A writer of documents first takes the page's advisory lock for every name it writes, in
  one order every writer shares (by lock key), before it reads or writes any of them: two
  writers of the same page take turns, and no two wait for each other in a cycle.
- An import or snapshot import is one transaction over a file in any order: it cannot take
  its pages in order, so it takes the store's bulk lock alone (exclusive), and every other
  writer of documents takes it shared. Batch writers share the store; an import waits for
  them and they for it, never in a cycle.
- What PostgreSQL still reports retryable (a deadlock through a path outside these locks, a
  serialization failure) is WriteConflict (failures.py), and `retrying()` runs the write
  again a few times, as the upstream layer retries with tenacity.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy import Connection, text
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

from ...errors import WriteConflict

log = logging.getLogger("mirror.store")

# Tries of a write PostgreSQL rolled back for a collision: a collision needs two writers on
# the same pages at the same instant, so a second try nearly always goes through.
ATTEMPTS = 5
# Backoff between tries: random up to 0.05 s, 0.1 s, ... (at most 2 s), so two writers that
# collided do not collide again in step. Tests patch it to tenacity's wait_none().
WAIT = wait_random_exponential(multiplier=0.05, max=2)

# The two-part advisory lock keys dk-mirror takes (pg_advisory_xact_lock(int, int)): a class
# of its own, so no other application's advisory locks on the database are mistaken for ours.
_PAGES = 0x646B6D01  # "dkm" + 1: one lock per page name (its hashtext)
_BULK = 0x646B6D02  # the store's bulk lock (key 0)
_LOG = 0x646B6D03  # the change log's append lock (key 0)

# Names to lock, by lock key, one statement: the subquery's ORDER BY (kept by OFFSET 0, so
# the planner cannot flatten it away) is the order the outer scan takes the locks in.
_LOCK_PAGES = text(
    f"SELECT count(pg_advisory_xact_lock({_PAGES}, k)) FROM ("
    "SELECT DISTINCT hashtext(n) AS k FROM unnest(CAST(:names AS text[])) AS n "
    "ORDER BY k OFFSET 0) AS keys"
)
_BULK_ALONE = text(f"SELECT pg_advisory_xact_lock({_BULK}, 0)")
# Execution option of a writer's connection holding the store alone: its pages need no locks
# of their own (and a million-page import must not take a million: PostgreSQL's lock table
# holds some 64 per connection).
_ALONE = "dk_mirror_alone"
_BULK_SHARED = text(f"SELECT pg_advisory_xact_lock_shared({_BULK}, 0)")


_TAKE_LOG = text(f"SELECT pg_advisory_xact_lock({_LOG}, 0)")


def take_log(conn: Connection) -> None:
    """Take the change log for the rest of this transaction (PostgreSQL; SQLite's writer is
    alone already): the ids a writer's events get then follow the order writers commit in,
    so a reader resuming after the newest id it saw never misses an event committed later.
    Taken last in a write (after its pages), so it never waits in a cycle with them."""
    if conn.dialect.name == "postgresql":
        conn.execute(_TAKE_LOG)


def retrying() -> Retrying:
    """A tenacity loop that runs a write again when PostgreSQL rolled it back for colliding
    with another writer: `for attempt in retrying(): with attempt, <transaction>: ...`."""
    return Retrying(
        retry=retry_if_exception_type(WriteConflict),
        stop=stop_after_attempt(ATTEMPTS),
        wait=WAIT,
        before_sleep=_say_retrying,
        reraise=True,
    )


def _say_retrying(state: object) -> None:
    number = getattr(state, "attempt_number", 0)
    log.info("a write collided with another writer's; trying again (try %d)", number + 1)


def take_pages(conn: Connection, names: Iterable[str]) -> None:
    """Lock the pages `names` for this transaction, in the order every writer uses (PostgreSQL;
    SQLite's writer is alone already). Call before reading or writing any of them."""
    if conn.dialect.name != "postgresql" or conn.get_execution_options().get(_ALONE):
        return
    listed = list(names)
    if listed:
        conn.execute(_BULK_SHARED)
        conn.execute(_LOCK_PAGES, {"names": listed})


def take_store(conn: Connection, *, alone: bool) -> None:
    """Take the store's bulk lock for this transaction: alone (an import that writes pages in
    file order) or shared (a writer that locks its pages in order). PostgreSQL only."""
    if conn.dialect.name != "postgresql":
        return
    conn.execute(_BULK_ALONE if alone else _BULK_SHARED)
    if alone:
        # A writer's connection lives for one write (Store._writer), so the mark ends with it.
        conn.execution_options(**{_ALONE: True})
