"""The change log's use cases: list what changed, narrowed the ways a reader asks.

The store appends events on every write (store/tables/changes.py); this module reads them.
Local only: no network, ever.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..changes.events import ChangeEvent, ChangeFilter
from ..changes.since import parse_since
from ..errors import InvalidInput
from .context import Context
from .documents import prefix_form

# Characters of a lock file's sha256 that name it in a feed URL (`?lock=`): short enough to
# read, long enough that two lock files never share one.
LOCK_ID_CHARS = 16


def list_changes(
    ctx: Context,
    *,
    since: str | None = None,
    prefix: str | None = None,
    lock: Path | None = None,
    kind: str | None = None,
    limit: int = 100,
    before_id: int | None = None,
    names: frozenset[str] | None = None,
) -> list[ChangeEvent]:
    """Events newest first: `since` a duration, id or date; under `prefix` (any name form);
    of the documents `lock` pins (or of `names`); of a `kind` (added, changed, removed) or
    class (signal, structure, code, text, cosmetic); at most `limit`; before `before_id`."""
    start = parse_since(since, ctx.clock()) if since else None
    wanted = ChangeFilter(
        since_id=start.after_id if start else None,
        since=start.at if start else None,
        prefix=prefix_form(prefix) if prefix else None,
        kind=kind,
        names=lock_names(lock) if lock is not None else names,
        before_id=before_id,
        limit=limit,
    )
    return ctx.store.changes(wanted)


def lock_names(path: Path) -> frozenset[str]:
    """The names a lock file pins."""
    from ..snapshots.lockfile import read_lock_file

    return frozenset(entry.name for entry in read_lock_file(path))


def lock_id(path: Path) -> str:
    """The id a feed URL names a lock file by: the start of its bytes' sha256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInput(
            f"cannot read the lock file {path}: {exc.strerror or exc}",
            hint="give the path of a dk-mirror.lock file (dk-mirror lock writes one)",
        ) from None
    return hashlib.sha256(data).hexdigest()[:LOCK_ID_CHARS]
