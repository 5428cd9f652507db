"""The terms of an SQLite store's FTS5 index by their first letters, for typo correction, read
once per process and index state.

fts5vocab counts each term's pages by walking its whole doclist, so reading the terms that
share two first letters cost 10 to 30 ms at 50,000 pages: most of a query with one typo. The
index changes only by writes, and every write to an FTS5 index rewrites two small records of
its own: the structure record (a cookie bumped by each write, the segments) and the averages
record (the page count and token totals). Both together, read in microseconds, say whether a
slice read before still holds; a slice of another index state is never used.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from .sql import FTS_TABLE, FTS_VOCAB

# FTS5's own rowids of the averages and the structure record in its %_data table.
_STATE = f"SELECT group_concat(hex(block), '.') FROM {FTS_TABLE}_data WHERE id IN (1, 10)"
_FILE = "SELECT file FROM pragma_database_list WHERE name = 'main'"
_TERMS = f"SELECT term, doc FROM {FTS_VOCAB} WHERE term >= ? AND term < ? LIMIT ?"
# Slices kept per process (one per store file and pair of first letters): a few hundred
# terms each in a docs vocabulary, at most `limit` (typo correction's cap) in any.
KEPT = 256

Slice = list[tuple[str, int]]
_slices: OrderedDict[tuple[str, str, str, int], Slice] = OrderedDict()
_lock = threading.Lock()


def terms_from(raw: Any, prefix: str, limit: int) -> Slice:
    """The index's terms starting with `prefix` (at most `limit`, in term order), each with
    the number of pages holding it, on sqlite3 connection `raw`."""
    file = raw.execute(_FILE).fetchone()
    if not file or not file[0]:
        # A memory database has no name to tell it from another: read it every time.
        return _read(raw, prefix, limit)
    state = raw.execute(_STATE).fetchone()
    key = (str(file[0]), str(state[0] if state else ""), prefix, limit)
    with _lock:
        found = _slices.get(key)
        if found is not None:
            _slices.move_to_end(key)
            return found
    found = _read(raw, prefix, limit)
    with _lock:
        _slices[key] = found
        while len(_slices) > KEPT:
            _slices.popitem(last=False)
    return found


def _read(raw: Any, prefix: str, limit: int) -> Slice:
    rows = raw.execute(_TERMS, (prefix, prefix + "\uffff", limit)).fetchall()
    return [(str(term), int(docs)) for term, docs in rows]
