"""Large index writes in parts: commit tantivy every COMMIT_EVERY pages, and remember which
pages a bulk write indexed before the store committed it.

Tantivy holds what it indexed since its last commit in memory (about 2.5 KB a page), so one
commit for a large import, sync or rebuild would grow with it. A bulk write (an import) that
commits the index in parts publishes entries of pages its store transaction may yet roll back;
their names go to a file in the index folder first, so after a failure or a crash the next sync
repairs just those pages (and the changes logged since) instead of rebuilding the whole index
(tantivy indexes about 1,200 pages/s on a 2-core machine: tens of minutes at a million pages).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ...db.disk import index_writes
from .native_memory import trim
from .shards import ShardWriter

# Pages indexed between two commits of a large write.
COMMIT_EVERY = 2_000
# Names read back from the pending file per batch.
_BATCH = 500


class Parts:
    """Commits a writer every COMMIT_EVERY pages. `before(names)` runs before each part commit
    with the names indexed since the previous one."""

    def __init__(
        self,
        writer: ShardWriter,
        before: Callable[[list[str]], None] | None = None,
    ) -> None:
        self._writer = writer
        self._before = before
        self._names: list[str] = []

    def added(self, names: list[str]) -> None:
        self._names.extend(names)
        if len(self._names) >= COMMIT_EVERY:
            self.commit()

    def commit(self) -> None:
        if self._before is not None:
            self._before(self._names)
        self._writer.commit()
        trim()
        self._names = []


class PendingNames:
    """Names of pages whose index entries a bulk write published before its store committed:
    one JSON string per line in a file in the index folder, appended and flushed to disk before
    each part commit."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, names: list[str]) -> None:
        with index_writes(self.path.parent), open(self.path, "a", encoding="utf-8") as out:
            out.writelines(json.dumps(name) + "\n" for name in names)
            out.flush()
            os.fsync(out.fileno())

    def exists(self) -> bool:
        return self.path.is_file()

    def batches(self) -> Iterator[list[str]]:
        batch: list[str] = []
        with open(self.path, encoding="utf-8") as names:
            for line in names:
                try:
                    name = json.loads(line)
                except ValueError:
                    continue  # the last line of a write cut short: not committed yet
                if isinstance(name, str):
                    batch.append(name)
                if len(batch) >= _BATCH:
                    yield batch
                    batch = []
        if batch:
            yield batch

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
