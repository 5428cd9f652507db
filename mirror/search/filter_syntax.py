"""The filter grammar's vocabulary and tokens: fields, operators, errors with positions."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..limits import MAX_TEXT

# Upstream refuses longer filters with INVALID_ARGUMENT.
MAX_FILTER_LENGTH = MAX_TEXT
EQUALITY = ("=", "!=")
ORDERING = ("=", "!=", "<", "<=", ">", ">=")
# Field -> allowed operators. `!=` on the ordered fields is in the howto page, not the proto.
FIELDS: dict[str, tuple[str, ...]] = {
    "content_length_bytes": ORDERING,
    "data_source": EQUALITY,
    "update_time": ORDERING,
    "uri": EQUALITY,
}
# Filter field -> key of the same field in the API's Document JSON.
JSON_KEYS = {
    "content_length_bytes": "contentLengthBytes",
    "data_source": "dataSource",
    "update_time": "updateTime",
    "uri": "uri",
}
# The SQL columns are 64-bit; a wider literal could not be bound.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
HINT = (
    "fields: content_length_bytes, data_source, update_time, uri; put string and timestamp values "
    'in double quotes, e.g. data_source = "web.dev" AND update_time >= "2025-01-01T00:00:00Z"'
)
# Python values and SQLAlchemy columns overload the same operators, so both sides use this.
COMPARE: dict[str, Callable[[Any, Any], Any]] = dict(
    zip(
        ORDERING,
        (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge),
        strict=True,
    )
)


class InvalidFilter(InvalidInput):
    """A filter the grammar refuses; `.position` is a 0-based column, `.expected` what fits there."""

    def __init__(
        self,
        text: str,
        position: int,
        expected: str,
        *,
        problem: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.text = text
        self.position = position
        self.expected = expected
        problem = problem or f"expected {expected}" + (f", found {found}" if found else "")
        head = f"filter: {problem} at column {position}: "
        # Long filters are shown as a window around the position so the caret stays readable.
        start = max(0, position - 60)
        shown = text[start : position + 40]
        lead = "..." if start else ""
        # Tabs and newlines would break the caret's alignment; show them as spaces.
        shown = "".join(c if c.isprintable() else " " for c in shown)
        tail = "..." if position + 40 < len(text) else ""
        caret = " " * (len(head) + len(lead) + position - start) + "^"
        super().__init__(f"{head}{lead}{shown}{tail}\n{caret}", hint=hint or HINT)


# --- tokens -------------------------------------------------------------------------------------

_SPACE = re.compile(r"\s*")
# A bare word runs to whitespace or to a character that is a token on its own.
_WORD = re.compile(r"[^\s()\"=<>!:]+")
INTEGER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # word | string | op | ( | ) | - | end | bad
    text: str  # as written (for strings: the decoded value)
    start: int
    spaced: bool  # whitespace (or the start of the text) comes before it
    error: InvalidFilter | None = None


def tokenize(text: str) -> list[Token]:
    out: list[Token] = []
    pos = _skip_space(text, 0)
    spaced = True
    while True:
        start = pos
        if pos >= len(text):
            out.append(Token("end", "", pos, spaced))
            return out
        c = text[pos]
        error = None
        if c in "()":
            kind, value, pos = c, c, pos + 1
        elif c == '"':
            kind, value, pos, error = _string(text, pos)
        elif c in "=<>!:":
            two = text[pos : pos + 2]
            kind, value = "op", two if two in ("<=", ">=", "!=") else c
            pos += len(value)
            if value in ("!", ":") or two == "==":
                what = {"!": "'!='", ":": "'=' (the ':' has-operator is not supported)"}
                kind = "bad"
                error = InvalidFilter(text, start, what.get(value, "'=' (not '==')"))
        elif c == "-" and not text[pos + 1 : pos + 2].isdigit():
            # A leading '-' negates the term after it; '-5' is a number.
            kind, value, pos = "-", "-", pos + 1
        else:
            m = _WORD.match(text, pos)
            assert m is not None  # c is neither space nor special, so one character matches
            kind, value, pos = "word", m.group(), m.end()
        # Errors travel as tokens: the parser raises the first one it reaches, so a stray quote
        # later in the text does not hide a clearer error earlier on.
        out.append(Token(kind, value, start, spaced, error))
        after = _skip_space(text, pos)
        spaced, pos = after > pos, after


def _skip_space(text: str, pos: int) -> int:
    m = _SPACE.match(text, pos)
    assert m is not None  # `\s*` matches everywhere
    return m.end()


def _string(text: str, start: int) -> tuple[str, str, int, InvalidFilter | None]:
    chars: list[str] = []
    pos = start + 1
    while pos < len(text):
        c = text[pos]
        if c == '"':
            return "string", "".join(chars), pos + 1, None
        if c == "\\":
            nxt = text[pos + 1 : pos + 2]
            if nxt not in ('"', "\\"):
                err = InvalidFilter(text, pos, '\\" or \\\\ (the only escapes in a string)')
                return "bad", "", pos + 1, err
            chars.append(nxt)
            pos += 2
            continue
        chars.append(c)
        pos += 1
    err = InvalidFilter(
        text, start, "a closing '\"'", problem="unterminated string: no closing '\"' for the quote"
    )
    return "bad", "", len(text), err
