"""The symbol index's reads as SQL text, shared by the Store (SQLAlchemy's text()) and the
cold-path Reader (stdlib sqlite3): both accept `:name` parameters."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ...symbols import choose
from ...symbols.model import Symbol

# Only names whose documenting page is stored with content are shown: a link can name a
# page the mirror does not hold.
_SHOWN = "EXISTS (SELECT 1 FROM documents AS d WHERE d.name = s.document AND d.content IS NOT NULL)"
_COLUMNS = "s.name, s.type, s.document, s.anchor, s.parent, s.source"

EXACT = f"SELECT {_COLUMNS} FROM symbols AS s WHERE s.key = :key AND {_SHOWN}"
ALL = f"SELECT {_COLUMNS} FROM symbols AS s WHERE {_SHOWN} ORDER BY s.name"
# The first :limit names whose `key` or `leaf` starts with :low (< :high ends the range):
# an exact match first, then shorter names, then by name; every row of each.
_PREFIX = (
    f"SELECT {_COLUMNS}, top.exact, top.size FROM symbols AS s JOIN ("
    "SELECT s.name AS name, min(CASE WHEN s.{col} = :low THEN 0 ELSE 1 END) AS exact, "
    "length(s.name) AS size FROM symbols AS s "
    f"WHERE s.{{col}} >= :low AND s.{{col}} < :high AND {_SHOWN} "
    "GROUP BY s.name ORDER BY exact, size, s.name LIMIT :limit"
    ") AS top ON top.name = s.name WHERE {shown}"
)
BY_KEY = _PREFIX.format(col="key", shown=_SHOWN)
BY_LEAF = _PREFIX.format(col="leaf", shown=_SHOWN)


def prefix_params(prefix: str, limit: int) -> dict[str, Any]:
    """The parameters of BY_KEY and BY_LEAF for a prefix as typed."""
    low = prefix.strip().casefold()
    return {"low": low, "high": low + "\U0010ffff", "limit": limit}


def best(rows: Iterable[Sequence[Any]]) -> list[Symbol]:
    """One symbol per name from rows of _COLUMNS, in the order names first appear
    (symbols/choose.py says which)."""
    return choose.best((Symbol(*row[:5]), row[5]) for row in rows)


def ranked(rows: Sequence[Sequence[Any]]) -> list[Symbol]:
    """The symbols of BY_KEY / BY_LEAF rows, best first (exact, shorter, by name)."""
    order = sorted(rows, key=lambda row: (row[6], row[7], row[0]))
    return best(order)


def merged(
    by_key: Sequence[Sequence[Any]], by_leaf: Sequence[Sequence[Any]], limit: int
) -> list[Symbol]:
    """The first `limit` symbols of a prefix lookup: names starting with it, then names
    whose last part does (`Dense` finds tf.keras.layers.Dense)."""
    found = ranked(by_key)
    seen = {s.name for s in found}
    found += [s for s in ranked(by_leaf) if s.name not in seen]
    return found[:limit]
