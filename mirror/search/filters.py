"""The upstream filter grammar (a subset of AIP-160): one parser, one AST, two evaluators.

    filter      := [expression]
    expression  := sequence {"AND" sequence}        explicit AND binds loosest
    sequence    := factor {WS factor}               juxtaposition is an implicit AND
    factor      := term {"OR" term}                 OR binds tighter than AND (AIP-160)
    term        := ["NOT" | "-"] simple
    simple      := field op value | "(" expression ")"

Fields are `data_source`, `uri` (`=`, `!=`, double-quoted strings), `update_time` (all six
comparators, a double-quoted RFC 3339 timestamp) and `content_length_bytes` (all six, a bare or
quoted integer). The same AST is evaluated in Python (`evaluate`) and compiled to SQL (`to_sql`,
in store/db/filter_sql.py, since only store/ speaks SQL); both follow one rule for missing values, stated at `evaluate`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias

from ..timestamps import RFC3339, canonical_timestamp, instant_key
from .filter_syntax import (
    COMPARE,
    FIELDS,
    HINT,
    INT_MAX,
    INT_MIN,
    INTEGER,
    JSON_KEYS,
    MAX_FILTER_LENGTH,
    InvalidFilter,
    Token,
    tokenize,
)

__all__ = [
    "COMPARE",
    "FIELDS",
    "HINT",
    "JSON_KEYS",
    "MAX_FILTER_LENGTH",
    "And",
    "Compare",
    "InvalidFilter",
    "Node",
    "Not",
    "Or",
    "canonical_timestamp",
    "evaluate",
    "instant_key",
    "parse",
    "to_text",
    "validate",
]


@dataclass(frozen=True, slots=True)
class Compare:
    """`field op value`; update_time values are kept as canonical UTC RFC 3339 text."""

    field: str
    op: str
    value: str | int

    def __post_init__(self) -> None:
        if self.op not in FIELDS.get(self.field, ()):
            raise ValueError(f"{self.field} {self.op} is not a valid comparison")
        if self.field == "content_length_bytes":
            if type(self.value) is not int or not INT_MIN <= self.value <= INT_MAX:
                raise ValueError(f"content_length_bytes needs a 64-bit int, not {self.value!r}")
        elif not isinstance(self.value, str):
            raise ValueError(f"{self.field} needs a string, not {self.value!r}")
        elif self.field == "update_time":
            canonical = canonical_timestamp(self.value)
            if canonical is None:
                raise ValueError(f"{self.value!r} is not an RFC 3339 timestamp")
            # Equal instants must give equal nodes (and equal cache keys) whatever the offset.
            object.__setattr__(self, "value", canonical)


@dataclass(frozen=True, slots=True)
class _Group:
    items: tuple[Node, ...]

    def __post_init__(self) -> None:
        # A list is accepted for convenience; the node stays hashable and immutable.
        object.__setattr__(self, "items", tuple(self.items))
        if not self.items:
            raise ValueError(f"{type(self).__name__} needs at least one item")


@dataclass(frozen=True, slots=True)
class And(_Group):
    """All items hold."""


@dataclass(frozen=True, slots=True)
class Or(_Group):
    """At least one item holds."""


@dataclass(frozen=True, slots=True)
class Not:
    """The item does not hold."""

    item: Node


Node: TypeAlias = Compare | And | Or | Not

# --- parser -------------------------------------------------------------------------------------

_KEYWORDS = ("AND", "OR", "NOT")
_FIELD_LIST = "content_length_bytes, data_source, update_time or uri"


def _found(tok: Token) -> str:
    if tok.kind == "end":
        return "the end of the filter"
    shown = tok.text if tok.kind != "string" else '"' + tok.text + '"'
    return repr(shown if len(shown) <= 40 else shown[:37] + "...")


def _join(kind: type[And] | type[Or], items: list[Node]) -> Node:
    # Flattening makes `a AND (b AND c)` and `a AND b AND c` one AST, so one cache key.
    flat: list[Node] = []
    for item in items:
        flat.extend(item.items if isinstance(item, kind) else (item,))
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def _suggest(name: str) -> str | None:
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower().removeprefix("document.")
    if snake in FIELDS:
        return snake
    close = difflib.get_close_matches(snake, FIELDS, n=1, cutoff=0.75)
    return close[0] if close else None


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self) -> Token:
        tok = self.tokens[self.i]
        if tok.error is not None:
            raise tok.error
        return tok

    def take(self) -> Token:
        tok = self.peek()
        self.i += 1
        return tok

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        return tok.kind == "word" and tok.text == word

    def fail(self, tok: Token, expected: str, hint: str | None = None) -> InvalidFilter:
        found = None if tok.kind == "end" else _found(tok)
        return InvalidFilter(self.text, tok.start, expected, found=found, hint=hint)

    def filter(self) -> Node:
        node = self.expression(None)
        tok = self.peek()
        if tok.kind != "end":  # only a ')' stops an expression early
            raise InvalidFilter(
                self.text, tok.start, "AND, OR or the end of the filter", problem="unbalanced ')'"
            )
        return node

    def expression(self, after: str | None) -> Node:
        items = [self.sequence(after)]
        while self.keyword("AND"):
            self.take()
            items.append(self.sequence("'AND'"))
        return _join(And, items)

    def sequence(self, after: str | None) -> Node:
        items = [self.factor(after)]
        while True:
            tok = self.peek()
            if tok.kind in ("end", ")") or (tok.kind == "word" and tok.text == "AND"):
                return _join(And, items)
            if not tok.spaced:
                raise self.fail(tok, "whitespace, AND or OR before the next term")
            # Juxtaposed terms are an implicit AND (AIP-160 "sequence").
            items.append(self.factor(None))

    def factor(self, after: str | None) -> Node:
        items = [self.term(after)]
        while self.keyword("OR"):
            self.take()
            items.append(self.term("'OR'"))
        return _join(Or, items)

    def term(self, after: str | None) -> Node:
        tok = self.peek()
        if tok.kind == "-" or self.keyword("NOT"):
            self.take()
            return Not(self.simple(f"'{tok.text}'"))
        return self.simple(after)

    def simple(self, after: str | None) -> Node:
        tok = self.peek()
        where = f" after {after}" if after else ""
        if tok.kind == "(":
            self.take()
            node = self.expression("'('")
            close = self.peek()
            if close.kind != ")":
                raise self.fail(close, f"')' (to close the '(' of column {tok.start})")
            self.take()
            return node
        if tok.kind != "word" or tok.text in _KEYWORDS:
            raise self.fail(tok, f"a field name or '('{where}")
        return self.restriction()

    def restriction(self) -> Compare:
        tok = self.take()
        name = tok.text
        if name not in FIELDS:
            expected = f"a field name ({_FIELD_LIST})"
            if name.upper() in _KEYWORDS:
                problem = f"{name!r} is not a field; the keywords AND, OR and NOT are upper-case"
            elif (suggestion := _suggest(name)) is not None:
                problem = (
                    f"unknown field {name!r}; did you mean {suggestion}? (fields are snake_case)"
                )
            else:
                problem = f"unknown field {_found(tok)}: expected {expected}"
            raise InvalidFilter(self.text, tok.start, expected, problem=problem)
        ops = FIELDS[name]
        op = self.peek()
        if op.kind != "op":
            raise self.fail(op, f"an operator ({' '.join(ops)}) after {name!r}")
        self.take()
        if op.text not in ops:
            raise InvalidFilter(
                self.text,
                op.start,
                f"one of {' '.join(ops)}",
                problem=f"operator {op.text!r} is not supported for {name} (use {' or '.join(ops)})",
            )
        return Compare(name, op.text, self.value(name, op.text))

    def value(self, name: str, op: str) -> str | int:
        tok = self.peek()
        if tok.kind not in ("word", "string") or (tok.kind == "word" and tok.text in _KEYWORDS):
            raise self.fail(tok, f"a value after {op!r}")
        if name == "content_length_bytes":
            if not INTEGER.fullmatch(tok.text):
                raise self.fail(tok, "an integer, e.g. content_length_bytes < 50000")
            number = int(tok.text)
            if not INT_MIN <= number <= INT_MAX:
                raise self.fail(tok, "an integer within 64 bits")
            self.take()
            return number
        if tok.kind != "string":
            raise self.fail(tok, f'a double-quoted string after {op!r}, e.g. {name} {op} "..."')
        if name == "update_time":
            m = RFC3339.fullmatch(tok.text)
            canonical = canonical_timestamp(tok.text)
            if canonical is None or m is None or len(m.group(7) or "") > 9:
                raise self.fail(
                    tok,
                    'an RFC 3339 timestamp like "2025-01-01T00:00:00Z" or '
                    '"2025-01-01T09:30:00.5+05:30" (at most 9 fraction digits)',
                )
            self.take()
            return canonical
        self.take()
        return tok.text


# --- public API ---------------------------------------------------------------------------------


def parse(text: str | None) -> Node | None:
    """Parse a filter into its AST; None for no filter; InvalidFilter if the grammar refuses it."""
    return None if text is None else _parse(text)


# The same filter text comes back with every search of a session; the AST is immutable.
@lru_cache(maxsize=1024)
def _parse(text: str) -> Node | None:
    if len(text) > MAX_FILTER_LENGTH:
        raise InvalidFilter(
            text,
            MAX_FILTER_LENGTH,
            f"at most {MAX_FILTER_LENGTH} characters",
            problem=f"{len(text)} characters is too long (the API allows at most "
            f"{MAX_FILTER_LENGTH}); the excess begins",
            hint="shorten the filter, or split the query into several narrower ones",
        )
    if not text.strip():
        return None
    return _Parser(text).filter()


def _unwrap(node: Node) -> Node:
    while isinstance(node, And | Or) and len(node.items) == 1:
        node = node.items[0]
    return node


def to_text(node: Node) -> str:
    """The canonical filter text for `node`; it parses back to the same (flattened) AST."""
    node = _unwrap(node)
    if isinstance(node, Compare):
        if isinstance(node.value, int):
            return f"{node.field} {node.op} {node.value}"
        quoted = node.value.replace("\\", "\\\\").replace('"', '\\"')
        return f'{node.field} {node.op} "{quoted}"'
    if isinstance(node, Not):
        inner = _unwrap(node.item)
        return "NOT " + (to_text(inner) if isinstance(inner, Compare) else f"({to_text(inner)})")
    if isinstance(node, And):
        # OR binds tighter than AND, so these parentheses change nothing here; they are kept so
        # the text reads the same to anyone (or any server) who assumes the usual precedence.
        return " AND ".join(_grouped(item, Or) for item in node.items)
    return " OR ".join(_grouped(item, And) for item in node.items)


def _grouped(node: Node, kind: type[And] | type[Or]) -> str:
    return f"({to_text(node)})" if isinstance(_unwrap(node), kind) else to_text(node)


def validate(text: str | None) -> str | None:
    """Check a filter before it goes upstream; return its canonical text (None for no filter)."""
    node = parse(text)
    if node is None or text is None:
        return None
    canonical = to_text(node)
    # The canonical form spaces every operator, so it can outgrow the limit the original met;
    # then the original, which parses to the same AST, is the one to send.
    return canonical if len(canonical) <= MAX_FILTER_LENGTH else text.strip()


def _doc_value(field: str, raw: Any) -> str | int | None:
    if field == "content_length_bytes":
        if type(raw) is int:
            return raw
        # int64 travels as a JSON string in protobuf JSON; accept that spelling too.
        return int(raw) if isinstance(raw, str) and INTEGER.fullmatch(raw) else None
    if not isinstance(raw, str):
        return None
    return instant_key(raw) if field == "update_time" else raw


def evaluate(node: Node, doc: Mapping[str, Any]) -> bool:
    """Whether a Document (API JSON keys: dataSource, uri, updateTime, ...) matches `node`."""
    # The missing-value rule, shared with to_sql: a comparison on a missing field (absent, null,
    # or not a valid value of its type) is False for every operator, `!=` included; AND, OR and
    # NOT are then ordinary two-valued logic, so `NOT uri = "x"` holds for a document with no
    # uri. SQL gets the same truth table from its three-valued logic: AND and OR already treat
    # NULL like False wherever the final answer is "selected or not", and NOT x is compiled as
    # NOT coalesce(x, false).
    if isinstance(node, Compare):
        have = _doc_value(node.field, doc.get(JSON_KEYS[node.field]))
        if have is None:
            return False
        want = instant_key(str(node.value)) if node.field == "update_time" else node.value
        return bool(COMPARE[node.op](have, want))
    if isinstance(node, And):
        return all(evaluate(item, doc) for item in node.items)
    if isinstance(node, Or):
        return any(evaluate(item, doc) for item in node.items)
    return not evaluate(node.item, doc)
