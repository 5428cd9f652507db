"""The change log's writes and reads: `planned` and `record_removals` run inside the writer's
transaction, before the documents change (they read what is stored to know what changes);
`append` writes the planned events last; `read` answers newest first.

The one hook of every write: Store._write_prepared (fetch, crawl, refresh, import, snapshot
import, sync: every put) plans before its upsert and appends at its end; write/bulk.py's
removals (snapshot tombstones, sync) call `record_removals`. A put that leaves a document's
content as it is appends nothing, so there is exactly one event per change of content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, func, select

from ...changes.classify import classify
from ...changes.events import (
    ADDED,
    CHANGED,
    CLASS_BITS,
    KINDS,
    REMOVED,
    ChangeEvent,
    ChangeFilter,
    from_bits,
    to_bits,
)
from ...models import Document
from ..db import turns
from ..schema.changes import change_events
from ..schema.tables import documents

# Names per IN list: well under SQLite's variable limit, large enough to cost little per row.
BATCH = 500
_E = change_events.c
_D = documents.c
_COLUMNS = (_E.id, _E.name, _E.observed_at, _E.kind, _E.old_sha256, _E.new_sha256,
            _E.old_update_time, _E.new_update_time, _E.classes, _E.summary)  # fmt: skip


def _chunks(names: Sequence[str]) -> Iterable[list[str]]:
    for start in range(0, len(names), BATCH):
        yield list(names[start : start + BATCH])


def _stored(conn: Connection, names: Sequence[str]) -> dict[str, tuple[str | None, str | None]]:
    """name -> (content sha256, updateTime) of each stored row among `names`."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for part in _chunks(names):
        query = select(_D.name, _D.content_sha256, _D.update_time).where(_D.name.in_(part))
        found.update((name, (sha, update_time)) for name, sha, update_time in conn.execute(query))
    return found


def planned(
    conn: Connection, docs: Sequence[Document], hashes: Mapping[str, str | None], at: float
) -> list[dict[str, Any]]:
    """The events of `docs` (about to be upserted): one for each whose content differs from
    the stored copy's, classified against it; `hashes`: their content sha256 by name."""
    incoming = {doc.name: doc for doc in docs}  # the last copy of a name wins, as in the upsert
    stored = _stored(conn, list(incoming))
    rows: list[dict[str, Any]] = []
    for name, doc in incoming.items():
        old_sha, old_time = stored.get(name, (None, None))
        new_sha = hashes[name]
        if old_sha == new_sha:
            continue  # the same content (or still none): nothing changed
        kind = ADDED if old_sha is None else REMOVED if new_sha is None else CHANGED
        rows.append({
            "name": name, "observed_at": at, "kind": kind,
            "old_sha256": old_sha, "new_sha256": new_sha,
            "old_update_time": old_time if old_sha is not None else None,
            "new_update_time": doc.update_time if new_sha is not None else None,
            "classes": None, "summary": None,
        })  # fmt: skip
    if rows:
        _classify(conn, [r for r in rows if r["kind"] == CHANGED], incoming)
    return rows


def append(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Write planned events, as the last step of the write (see turns.take_log)."""
    if rows:
        turns.take_log(conn)
        conn.execute(change_events.insert(), rows)


def _classify(conn: Connection, rows: list[dict[str, Any]], incoming: dict[str, Document]) -> None:
    # The old content is still in `documents`: this runs before the upsert replaces it.
    by_name = {row["name"]: row for row in rows}
    for part in _chunks(list(by_name)):
        for name, old in conn.execute(select(_D.name, _D.content).where(_D.name.in_(part))):
            verdict = classify(old or "", incoming[name].content or "")
            by_name[name]["classes"] = to_bits(verdict.classes)
            by_name[name]["summary"] = verdict.summary


def record_removals(conn: Connection, names: Sequence[str], at: float) -> int:
    """Append a `removed` event for each of `names` (about to be deleted) that has content."""
    rows = [
        {"name": name, "observed_at": at, "kind": REMOVED, "old_sha256": sha,
         "new_sha256": None, "old_update_time": update_time, "new_update_time": None,
         "classes": None, "summary": None}
        for name, (sha, update_time) in _stored(conn, list(dict.fromkeys(names))).items()
        if sha is not None
    ]  # fmt: skip
    append(conn, rows)
    return len(rows)


def read(conn: Connection, wanted: ChangeFilter) -> list[ChangeEvent]:
    """The events `wanted` selects, newest first, at most `wanted.limit`."""
    query = select(*_COLUMNS).order_by(_E.id.desc()).limit(wanted.limit)
    if wanted.since_id is not None:
        query = query.where(_E.id > wanted.since_id)
    if wanted.before_id is not None:
        query = query.where(_E.id < wanted.before_id)
    if wanted.kind in KINDS:
        query = query.where(_E.kind == wanted.kind)
    elif wanted.kind is not None:
        query = query.where(_E.classes.op("&")(CLASS_BITS[wanted.kind]) != 0)
    ranges = _ranges(wanted)
    # A range that matches many events is answered fastest by walking the log from its newest
    # end (the first `limit` matches come soon); one that matches few, through its index. The
    # index says which cheaply: it counts up to DENSE matches and stops.
    dense = bool(ranges) and all(_dense(conn, column, low, high) for column, low, high in ranges)
    for column, low, high in ranges:
        if dense:  # `name || ''` and `observed_at + 0` hide the index: the key is walked
            column = column.concat("") if column is _E.name else column + 0
        query = query.where(*_within(column, low, high))
    if wanted.names is None:
        return [_event(row) for row in conn.execute(query)]
    # A lock's names, a chunk at a time: each chunk's newest `limit`, then the newest of all.
    found: list[ChangeEvent] = []
    for part in _chunks(sorted(wanted.names)):
        found.extend(_event(row) for row in conn.execute(query.where(_E.name.in_(part))))
    found.sort(key=lambda event: event.id, reverse=True)
    return found[: wanted.limit]


# Matches of a range past which walking the log newest first beats reading the range's index
# and sorting what it finds (bench/bench_changes.py: a 1,000,000-event log).
DENSE = 2000


def _ranges(wanted: ChangeFilter) -> list[tuple[Any, Any, Any]]:
    """The indexed columns `wanted` narrows to a range: (column, low, high or None)."""
    found: list[tuple[Any, Any, Any]] = []
    if wanted.prefix:
        found.append((_E.name, wanted.prefix, wanted.prefix + "\U0010ffff"))
    if wanted.since is not None or wanted.until is not None:
        found.append((_E.observed_at, wanted.since or 0.0, wanted.until))
    return found


def _within(column: Any, low: Any, high: Any) -> list[Any]:
    return [column >= low] if high is None else [column >= low, column < high]


def _dense(conn: Connection, column: Any, low: Any, high: Any) -> bool:
    """Whether at least DENSE events fall in the range (read from its index, DENSE at most)."""
    some = select(column).where(*_within(column, low, high)).limit(DENSE).subquery()
    return bool(conn.execute(select(func.count()).select_from(some)).scalar_one() >= DENSE)


def newest_id(conn: Connection) -> int | None:
    """The id of the newest event (None: the log is empty)."""
    return conn.execute(select(_E.id).order_by(_E.id.desc()).limit(1)).scalar()


def _event(row: Any) -> ChangeEvent:
    (event_id, name, observed_at, kind, old_sha, new_sha, old_time, new_time, bits,
     summary) = row  # fmt: skip
    return ChangeEvent(event_id, name, observed_at, kind, old_sha, new_sha, old_time, new_time,
                       from_bits(bits), summary)  # fmt: skip
