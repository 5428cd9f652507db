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
# Rows whose `key` (or `leaf`) starts with :low (< :high ends the range), in index order, so
# the scan stops after :rows rows however many names share a short prefix; ties by name.
BY_KEY = (
    f"SELECT {_COLUMNS} FROM symbols AS s WHERE s.key >= :low AND s.key < :high AND {_SHOWN} "
    "ORDER BY s.key LIMIT :rows"
)
BY_LEAF = (
    f"SELECT {_COLUMNS} FROM symbols AS s WHERE s.leaf >= :low AND s.leaf < :high AND {_SHOWN} "
    "ORDER BY s.leaf, s.key LIMIT :rows"
)
# Rows read per wanted name: a name linked from several pages has a row from each.
_ROWS_PER_NAME = 4


def prefix_params(prefix: str, limit: int) -> dict[str, Any]:
    """The parameters of BY_KEY and BY_LEAF for a prefix as typed."""
    low = prefix.strip().casefold()
    return {"low": low, "high": low + "\U0010ffff", "rows": limit * _ROWS_PER_NAME + 16}


def best(rows: Iterable[Sequence[Any]]) -> list[Symbol]:
    """One symbol per name from rows of _COLUMNS, in the order names first appear
    (symbols/choose.py says which)."""
    return choose.best((Symbol(*row[:5]), row[5]) for row in rows)


def wants_leaf(by_key: Sequence[Sequence[Any]], limit: int) -> bool:
    """Whether a lookup needs BY_LEAF too: BY_KEY's rows hold fewer than `limit` names."""
    return len({row[0] for row in by_key}) < limit


def merged(
    by_key: Sequence[Sequence[Any]], by_leaf: Sequence[Sequence[Any]], limit: int
) -> list[Symbol]:
    """The first `limit` symbols of a prefix lookup: names starting with the prefix in order
    (the exact name first, a namespace before its members), then names whose last part does
    (`Dense` finds tf.keras.layers.Dense)."""
    found = best(by_key)  # in key order, the exact name (the shortest) comes first
    seen = {s.name for s in found}
    found += [s for s in best(by_leaf) if s.name not in seen]
    return found[:limit]
