"""Filters compiled to SQL: a WHERE clause over the `documents` table that runs in the database.

It selects exactly the rows `filters.evaluate` accepts (tests/test_filters.py checks this on
random filters and documents). Two things need care:

* Missing values. A comparison on a NULL column is NULL (unknown) in SQL, where `evaluate`
  says False. AND and OR already agree with that (NULL behaves as False in every position that
  decides whether a row is selected), NOT does not: NOT NULL is NULL. So NOT x compiles to
  NOT coalesce(x, false), which is True exactly when x is not True.
* Timestamps. `update_time` is RFC 3339 text; offsets and fraction digits vary, so text
  comparison is wrong. Both sides compare `instant_key`s instead (UTC, 9 fraction digits).
  SQLite has no RFC 3339 parser that checks ranges, so its key is spelt out below with the
  validity rules of `instant_key`; an invalid stored value gives NULL, i.e. "missing".
  (julianday() takes the Z suffix on SQLite 3.40, but keeps only milliseconds and refuses
  offsets past 14:00, so it would disagree with Python at the edges.) The key is computed
  per row, so update_time conditions scan; the other fields compare the bare column.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnElement,
    LargeBinary,
    String,
    Table,
    and_,
    false,
    func,
    literal,
    not_,
    or_,
)
from sqlalchemy.exc import CompileError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from ...search.filters import COMPARE, And, Compare, Node, Or, instant_key


class InstantKey(FunctionElement[str]):
    """SQL for `filters.instant_key(column)`: the sortable UTC key, or NULL if not RFC 3339."""

    type = String()
    name = "instant_key"
    inherit_cache = True


# {x} is the upper-cased column (RFC 3339 allows a lower-case t and z), {zl} the zone's length
# (1 for Z, 6 for +HH:MM), {zone} the zone, {frac} the fraction with its dot ('' if none).
_SQLITE_VALID = (
    "substr({x}, 1, 19) GLOB "
    "'[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9]'"
    " AND substr({x}, 1, 4) <> '0000'"
    # SQLite takes 2026-02-31 as it stands; a no-op modifier makes it normalise, exposing it.
    " AND date(substr({x}, 1, 10), '+0 days') = substr({x}, 1, 10)"
    " AND substr({x}, 12, 2) <= '23' AND substr({x}, 15, 2) <= '59'"
    " AND substr({x}, 18, 2) <= '59' AND length({x}) >= 19 + {zl}"
    " AND ({zl} = 1 OR ({zone} GLOB '[+-][0-9][0-9]:[0-9][0-9]'"
    " AND substr({zone}, 2, 2) <= '23' AND substr({zone}, 5, 2) <= '59'))"
    " AND ({frac} = '' OR ({frac} GLOB '.[0-9]*' AND {frac} NOT GLOB '.*[^0-9]*'))"
)
# The offset is applied as modifiers rather than left to SQLite's own zone parsing, which
# refuses offsets beyond 14:00 that RFC 3339 (and Python) accept. max/nullif turn a result
# before year 1 (0001-01-01T00:30+01:00) into NULL, as Python's OverflowError does; SQLite
# already gives NULL past year 9999.
_SQLITE_KEY = (
    "CASE WHEN {valid} THEN nullif(max(strftime('%Y-%m-%dT%H:%M:%S', substr({x}, 1, 19), "
    "CASE WHEN {zl} = 1 THEN '+0 hours' ELSE {sign} || substr({zone}, 2, 2) || ' hours' END, "
    "CASE WHEN {zl} = 1 THEN '+0 minutes' ELSE {sign} || substr({zone}, 5, 2) || ' minutes' END"
    "), '0001'), '0001') || '.' || substr(substr({frac}, 2) || '000000000', 1, 9) END"
)

# PostgreSQL: the regex and the day-of-month check come first, in nested CASEs (evaluated in
# order), because a failing cast would abort the whole query. The offset is subtracted as an
# interval: timestamptz input refuses offsets beyond 15:59. Checked by hand against PostgreSQL
# 15 (the tests have no driver for it).
_PG_VALID = (
    "upper({c}) ~ '^[0-9]{{4}}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
    "T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$'"
    " AND substr({c}, 1, 4) <> '0000'"
)
_PG_DAY_OK = (
    "CAST(substr({c}, 9, 2) AS integer) <= extract(day from make_date(CAST(substr({c}, 1, 4) "
    "AS integer), CAST(substr({c}, 6, 2) AS integer), 1) + interval '1 month - 1 day')"
)
_PG_UTC = (
    "(CAST(substr({c}, 1, 10) || ' ' || substr({c}, 12, 8) AS timestamp) - CASE WHEN "
    "upper(right({c}, 1)) = 'Z' THEN interval '0 minutes' ELSE (CASE WHEN substr(right({c}, 6), "
    "1, 1) = '-' THEN -1 ELSE 1 END) * make_interval(hours => CAST(substr(right({c}, 6), 2, 2) "
    "AS integer), mins => CAST(right({c}, 2) AS integer)) END)"
)
_PG_KEY = (
    "CASE WHEN {valid} THEN CASE WHEN {day_ok} THEN CASE WHEN {utc} >= timestamp '0001-01-01' "
    "AND {utc} < timestamp '10000-01-01' THEN to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || '.' "
    "|| rpad(coalesce(substring({c} from '\\.([0-9]+)'), ''), 9, '0') END END END COLLATE \"C\""
)


class Utf8(FunctionElement[Any]):
    """A string column or value compared as its UTF-8 bytes where text cannot hold a NUL
    character (PostgreSQL): there a filter value holding U+0000 would fail the whole query with
    "text fields cannot contain NUL", while it is a valid filter that no stored value matches.
    Used only for values with a NUL, so ordinary comparisons keep using the column's index."""

    name = "utf8_bytes"
    inherit_cache = True


@compiles(Utf8)
def _utf8_default(element: Utf8, compiler: SQLCompiler, **kw: Any) -> str:
    (item,) = element.clauses
    return compiler.process(item, **kw)


@compiles(Utf8, "postgresql")
def _utf8_postgresql(element: Utf8, compiler: SQLCompiler, **kw: Any) -> str:
    (item,) = element.clauses
    if isinstance(item, BindParameter) and isinstance(item.value, str):
        # Bound as bytea: the value's NUL never reaches a text parameter.
        item = literal(item.value.encode("utf-8"), LargeBinary())
        return compiler.process(item, **kw)
    return f"convert_to({compiler.process(item, **kw)}, 'UTF8')"


def _column_sql(element: InstantKey, compiler: SQLCompiler, **kw: Any) -> str:
    (column,) = element.clauses
    return compiler.process(column, **kw)


@compiles(InstantKey)
def _instant_key_default(element: InstantKey, compiler: SQLCompiler, **kw: Any) -> str:
    raise CompileError(f"update_time filters are not implemented for {compiler.dialect.name}")


@compiles(InstantKey, "sqlite")
def _instant_key_sqlite(element: InstantKey, compiler: SQLCompiler, **kw: Any) -> str:
    x = f"upper({_column_sql(element, compiler, **kw)})"
    zl = f"(CASE WHEN substr({x}, -1) = 'Z' THEN 1 ELSE 6 END)"
    parts = {
        "x": x,
        "zl": zl,
        "zone": f"substr({x}, length({x}) - {zl} + 1)",
        "frac": f"substr({x}, 20, length({x}) - 19 - {zl})",
    }
    # Local time minus the offset is UTC, so the modifiers carry the opposite sign.
    parts["sign"] = f"(CASE WHEN substr({parts['zone']}, 1, 1) = '+' THEN '-' ELSE '+' END)"
    parts["valid"] = _SQLITE_VALID.format(**parts)
    return _SQLITE_KEY.format(**parts)


@compiles(InstantKey, "postgresql")
def _instant_key_postgresql(element: InstantKey, compiler: SQLCompiler, **kw: Any) -> str:
    c = _column_sql(element, compiler, **kw)
    parts = {"c": c, "utc": _PG_UTC.format(c=c)}
    parts["valid"] = _PG_VALID.format(c=c)
    parts["day_ok"] = _PG_DAY_OK.format(c=c)
    return _PG_KEY.format(**parts)


def to_sql(node: Node, table: Table) -> ColumnElement[bool]:
    """A WHERE clause over `table` (the documents table) that selects what `evaluate` accepts."""
    if isinstance(node, Compare):
        column = table.c[node.field]
        if node.field == "update_time":
            key = instant_key(str(node.value))
            assert key is not None  # Compare only holds valid timestamps
            compared: ColumnElement[bool] = COMPARE[node.op](
                InstantKey(column), literal(key, String())
            )
        elif isinstance(node.value, str) and "\0" in node.value:
            # Only = and != take strings other than timestamps (filter_syntax.FIELDS).
            compared = COMPARE[node.op](Utf8(column), Utf8(literal(node.value, String())))
        elif isinstance(node.value, int):
            # 64-bit, as the grammar allows: bound as the column's type, a value past 2**31
            # would fail on PostgreSQL, whose INTEGER is 32-bit ("integer out of range").
            compared = COMPARE[node.op](column, literal(node.value, BigInteger()))
        else:
            compared = COMPARE[node.op](column, node.value)
        return compared
    if isinstance(node, And):
        return and_(*(to_sql(item, table) for item in node.items))
    if isinstance(node, Or):
        return or_(*(to_sql(item, table) for item in node.items))
    return not_(func.coalesce(to_sql(node.item, table), false()))
