"""The filter grammar: one parser, canonical text, and Python and SQL evaluation that agree."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, create_engine, delete, event, insert, select
from sqlalchemy.dialects import mysql, postgresql
from sqlalchemy.exc import CompileError

from mirror.errors import InvalidInput
from mirror.search.filters import (
    MAX_FILTER_LENGTH,
    And,
    Compare,
    InvalidFilter,
    Node,
    Not,
    Or,
    evaluate,
    instant_key,
    parse,
    to_text,
    validate,
)
from mirror.store.db import compression
from mirror.store.db.filter_sql import to_sql
from mirror.store.schema.tables import documents, metadata
from tests.search_backends import BACKENDS, module_store_url


def ds(value: str, op: str = "=") -> Compare:
    return Compare("data_source", op, value)


def uri(value: str, op: str = "=") -> Compare:
    return Compare("uri", op, value)


def size(value: int, op: str = "<") -> Compare:
    return Compare("content_length_bytes", op, value)


A, B, C = uri("https://a"), uri("https://b"), uri("https://c")
TA, TB, TC = 'uri = "https://a"', 'uri = "https://b"', 'uri = "https://c"'

# --- table tests --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ast"),
    [
        # The three examples of the reference (section 4).
        (
            'data_source = "docs.cloud.google.com" OR data_source = "firebase.google.com"',
            Or((ds("docs.cloud.google.com"), ds("firebase.google.com"))),
        ),
        (
            'update_time >= "2025-01-22T00:00:00Z" AND '
            '(data_source = "developer.chrome.com" OR data_source = "web.dev")',
            And(
                (
                    Compare("update_time", ">=", "2025-01-22T00:00:00Z"),
                    Or((ds("developer.chrome.com"), ds("web.dev"))),
                )
            ),
        ),
        ("content_length_bytes < 50000", size(50000)),
        # OR binds tighter than AND, whichever side it is on.
        (f"{TA} AND {TB} OR {TC}", And((A, Or((B, C))))),
        (f"{TA} OR {TB} AND {TC}", And((Or((A, B)), C))),
        (f"({TA} AND {TB}) OR {TC}", Or((And((A, B)), C))),
        # Juxtaposition is an implicit AND, and OR binds tighter than it too.
        (f"{TA} {TB} OR {TC}", And((A, Or((B, C))))),
        (f"{TA}   {TB}", And((A, B))),
        # NOT and '-' negate one term; they bind tighter than OR.
        (f"NOT {TA} OR {TB}", Or((Not(A), B))),
        (f"-{TA}", Not(A)),
        (f"- {TA}", Not(A)),
        (f"-({TA} OR {TB})", Not(Or((A, B)))),
        (f"NOT({TA} AND {TB})", Not(And((A, B)))),
        (f"NOT (NOT {TA})", Not(Not(A))),
        # Parentheses group; same-kind groups flatten, so equivalent texts give one AST.
        (f"(({TA}))", A),
        (f"{TA} AND ({TB} AND {TC})", And((A, B, C))),
        (f"({TA} OR {TB}) OR {TC}", Or((A, B, C))),
        (f"({TA} {TB}) AND {TC}", And((A, B, C))),
        # Operators need no spaces around them.
        ('uri="https://a"', A),
        ("content_length_bytes>=-5", size(-5, ">=")),
        ("content_length_bytes != 0", size(0, "!=")),
        # Quoting: \" and \\ are the escapes; anything else inside the quotes is literal.
        (r'data_source = "say \"hi\" \\ bye"', ds('say "hi" \\ bye')),
        ('data_source = "a b\tc AND OR ( )"', ds("a b\tc AND OR ( )")),
        ('data_source = ""', ds("")),
        ('data_source != "ünïcödé"', ds("ünïcödé", "!=")),
        # Integers may be quoted; they are kept as numbers.
        ('content_length_bytes <= "031842"', size(31842, "<=")),
        # Timestamps keep their instant in one canonical UTC spelling.
        (
            'update_time = "2025-01-01T05:30:00+05:30"',
            Compare("update_time", "=", "2025-01-01T00:00:00Z"),
        ),
        (
            'update_time < "2025-01-01t00:00:00.500z"',
            Compare("update_time", "<", "2025-01-01T00:00:00.5Z"),
        ),
        (
            'update_time != "2024-12-31T23:00:00.000000001-01:00"',
            Compare("update_time", "!=", "2025-01-01T00:00:00.000000001Z"),
        ),
    ],
)
def test_parse(text: str, ast: Node) -> None:
    assert parse(text) == ast
    assert parse(to_text(ast)) == ast


@pytest.mark.parametrize("text", [None, "", "   ", "\n\t "])
def test_no_filter_is_none(text: str | None) -> None:
    assert parse(text) is None
    assert validate(text) is None


def test_canonical_text_spaces_operators_and_groups_or_inside_and() -> None:
    assert (
        validate('update_time>="2025-01-22T01:00:00+01:00" data_source="a"OR data_source="b"')
        == 'update_time >= "2025-01-22T00:00:00Z" AND (data_source = "a" OR data_source = "b")'
    )
    assert to_text(Or((And((A, B)), Not(Or((B, C)))))) == f"({TA} AND {TB}) OR NOT ({TB} OR {TC})"
    assert to_text(size(7)) == "content_length_bytes < 7"
    assert to_text(ds('q"\\')) == r'data_source = "q\"\\"'


def test_validate_keeps_the_original_when_the_canonical_form_would_pass_the_limit() -> None:
    text = " ".join(['uri="x"'] * 62)  # 495 characters; canonically 'uri = "x" AND ...'
    assert len(text) <= MAX_FILTER_LENGTH < len(to_text(parse(text)))  # type: ignore[arg-type]
    assert validate(text) == text


def test_ast_nodes_are_validated_immutable_and_hashable() -> None:
    assert Compare("update_time", ">", "2025-01-01T01:00:00+01:00").value == "2025-01-01T00:00:00Z"
    bad_args: list[tuple[str, str, Any]] = [
        ("data_source", "<", "x"),
        ("uri", "=", 5),
        ("size", "=", "x"),
    ]
    for bad in bad_args:
        with pytest.raises(ValueError):
            Compare(*bad)
    with pytest.raises(ValueError):
        Compare("content_length_bytes", "=", True)
    with pytest.raises(ValueError):
        And(())
    with pytest.raises(AttributeError):
        A.value = "x"  # type: ignore[misc]
    assert len({parse(f"{TA} OR {TB}"), Or((A, B))}) == 1


def _caret_column(exc: InvalidFilter) -> int:
    first, second = exc.message.splitlines()[:2]
    head = first.index(": ", first.index(" at column ")) + 2
    return second.index("^") - head


# (text, position, words the message must contain)
ERRORS = [
    ("data_source = ", 14, ["expected a value after '='"]),
    ('dataSource = "x"', 0, ["unknown field 'dataSource'", "did you mean data_source?"]),
    ('updateTime > "2025-01-01T00:00:00Z"', 0, ["did you mean update_time?"]),
    ("contentLengthBytes < 5", 0, ["did you mean content_length_bytes?"]),
    ('DATA_SOURCE = "x"', 0, ["did you mean data_source?"]),
    ('document.uri = "x"', 0, ["did you mean uri?"]),
    ('title = "x"', 0, ["unknown field 'title'", "content_length_bytes, data_source"]),
    (f"{TA} and {TB}", 18, ["'and' is not a field", "upper-case"]),
    ("data_source", 11, ["expected an operator (= !=) after 'data_source'"]),
    ('data_source "x"', 12, ["expected an operator"]),
    ('data_source < "x"', 12, ["operator '<' is not supported for data_source"]),
    ('uri >= "x"', 4, ["operator '>=' is not supported for uri"]),
    ('uri : "x"', 4, ["':' has-operator is not supported"]),
    ('uri == "x"', 4, ["'=' (not '==')"]),
    ('uri ! "x"', 4, ["expected '!='"]),
    ("data_source = web.dev", 14, ["expected a double-quoted string after '='", "'web.dev'"]),
    ('data_source = web.dev"', 14, ["expected a double-quoted string"]),
    ('data_source = "web.dev', 14, ["unterminated string"]),
    ('uri = "a\\n"', 8, ["the only escapes in a string"]),
    ("update_time > 2025-01-01T00:00:00Z", 14, ["double-quoted string"]),
    ('update_time > "2025-02-30T00:00:00Z"', 14, ["RFC 3339 timestamp"]),
    ('update_time > "2025-01-01"', 14, ["RFC 3339 timestamp"]),
    ('update_time > "2025-01-01T00:00:00"', 14, ["RFC 3339 timestamp"]),
    ('update_time > "2025-01-01T00:00:00.1234567891Z"', 14, ["at most 9 fraction digits"]),
    ("content_length_bytes < 5.5", 23, ["expected an integer"]),
    ('content_length_bytes < "five"', 23, ["expected an integer"]),
    ("content_length_bytes < 99999999999999999999", 23, ["within 64 bits"]),
    (f"({TA}", 18, ["expected ')' (to close the '(' of column 0)"]),
    (f"(({TA}) OR {TB}", 41, ["expected ')'"]),
    (f"{TA})", 17, ["unbalanced ')'"]),
    ("()", 1, ["expected a field name or '(' after '('", "found ')'"]),
    (f"{TA} AND", 21, ["expected a field name or '(' after 'AND'"]),
    (f"{TA} OR", 20, ["after 'OR'"]),
    (f"{TA} AND OR {TB}", 22, ["after 'AND'", "found 'OR'"]),
    (f"AND {TA}", 0, ["expected a field name or '('", "found 'AND'"]),
    ("NOT", 3, ["after 'NOT'"]),
    (f"NOT NOT {TA}", 4, ["after 'NOT'"]),
    (f"--{TA}", 1, ["after '-'"]),
    (f"{TA}{TB}", 17, ["whitespace, AND or OR"]),
    ("uri = AND", 6, ["expected a value after '='", "found 'AND'"]),
    ("x" * 501, 500, ["501 characters is too long", "at most 500"]),
]


@pytest.mark.parametrize(("text", "position", "words"), ERRORS)
def test_errors_name_the_position_and_what_was_expected(
    text: str, position: int, words: list[str]
) -> None:
    with pytest.raises(InvalidFilter) as info:
        parse(text)
    exc = info.value
    assert isinstance(exc, InvalidInput)
    assert exc.exit_code == 2
    assert exc.position == position
    assert f"at column {position}" in exc.message
    assert exc.message.startswith("filter: ")
    for word in words:
        assert word in str(exc)
    assert exc.hint and ("double quotes" in exc.hint or "shorten" in exc.hint)
    assert exc.expected
    if position - 60 <= 0:  # short texts are shown whole, with the caret under the spot
        assert _caret_column(exc) == position
    with pytest.raises(InvalidFilter):
        validate(text)


def test_error_message_matches_the_documented_shape() -> None:
    with pytest.raises(InvalidFilter) as info:
        parse("data_source = ")
    line, caret = info.value.message.splitlines()
    assert line == "filter: expected a value after '=' at column 14: data_source = "
    assert caret == " " * len(line) + "^"
    assert "content_length_bytes, data_source, update_time, uri" in str(info.value)


def test_long_filters_show_a_window_around_the_error() -> None:
    text = " AND ".join(['uri = "x"'] * 30) + " AND uri = y"
    with pytest.raises(InvalidFilter) as info:
        parse(text)
    line, caret = info.value.message.splitlines()[:2]
    assert info.value.position == len(text) - 1
    assert "..." in line and len(line) < 220
    assert line[caret.index("^")] == "y"


def test_at_most_500_characters() -> None:
    text = 'data_source = "' + "x" * (MAX_FILTER_LENGTH - 16) + '"'
    assert len(text) == MAX_FILTER_LENGTH
    assert parse(text) == ds("x" * (MAX_FILTER_LENGTH - 16))
    with pytest.raises(InvalidFilter):
        parse(text + " ")


# --- evaluation ---------------------------------------------------------------------------------

DOC = {
    "dataSource": "web.dev",
    "uri": "https://web.dev/articles/vitals",
    "updateTime": "2025-03-01T12:00:00.250+01:00",
    "contentLengthBytes": 31842,
}


@pytest.mark.parametrize(
    ("text", "doc", "expected"),
    [
        ('data_source = "web.dev"', DOC, True),
        ('data_source = "Web.dev"', DOC, False),  # exact, case-sensitive
        ('data_source = "web"', DOC, False),  # whole string, no prefix match
        ('data_source != "web.dev"', DOC, False),
        ('uri = "https://web.dev/articles/vitals"', DOC, True),
        ("content_length_bytes < 50000", DOC, True),
        ("content_length_bytes > 31842", DOC, False),
        ("content_length_bytes >= 31842", DOC, True),
        ("content_length_bytes != 31842", DOC, False),
        ('update_time = "2025-03-01T11:00:00.25Z"', DOC, True),  # the same instant
        ('update_time > "2025-03-01T11:00:00.2499Z"', DOC, True),
        ('update_time < "2025-03-01T11:00:00.2501Z"', DOC, True),
        # Compared as instants, not text: as text "12:00" > "11:30" would say the opposite.
        ('update_time < "2025-03-01T11:30:00Z"', DOC, True),
        ('update_time >= "2025-01-01T00:00:00Z" AND -data_source = "x"', DOC, True),
        # A missing field satisfies no comparison, not even `!=`; NOT of one is True.
        ('data_source != "x"', {}, False),
        ('data_source = "x"', {"dataSource": None}, False),
        ('NOT data_source = "x"', {}, True),
        ('NOT data_source != "x"', {}, True),
        ('update_time < "2999-01-01T00:00:00Z"', {"updateTime": "yesterday"}, False),
        ('NOT update_time < "2999-01-01T00:00:00Z"', {"updateTime": "yesterday"}, True),
        ("content_length_bytes < 5", {"contentLengthBytes": "3"}, True),  # int64 JSON spelling
        ("content_length_bytes < 5", {"contentLengthBytes": True}, False),
    ],
)
def test_evaluate(text: str, doc: dict[str, Any], expected: bool) -> None:
    node = parse(text)
    assert node is not None
    assert evaluate(node, doc) is expected


@pytest.mark.parametrize(
    ("stored", "key"),
    [
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000000"),
        ("2025-12-31T19:00:00.5-05:00", "2026-01-01T00:00:00.500000000"),
        ("2026-01-01t00:00:00.1234567891z", "2026-01-01T00:00:00.123456789"),
        ("2026-01-01T00:00:00+23:59", "2025-12-31T00:01:00.000000000"),
        ("2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000000000"),
        ("2026-02-29T00:00:00Z", None),
        ("2026-01-01T24:00:00Z", None),
        ("2026-01-01T23:59:60Z", None),
        ("2026-01-01T00:00:00", None),
        ("2026-01-01 00:00:00Z", None),
        ("2026-01-01T00:00:00.Z", None),
        ("2026-01-01T00:00:00+24:00", None),
        ("2026-01-01T00:00:00Z\n", None),
        ("0000-01-01T00:00:00Z", None),
        ("0001-01-01T00:00:00+00:01", None),  # before year 1 in UTC
        ("9999-12-31T23:59:59-00:01", None),  # after year 9999 in UTC
        ("\uff12\uff10\uff12\uff16-01-01T00:00:00Z", None),  # full-width digits
    ],
)
def test_instant_key(stored: str, key: str | None) -> None:
    assert instant_key(stored) == key


# --- SQL ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """One real database with the store's documents table, reused across examples: an SQLite
    file, and a PostgreSQL database (where the same filters compile to PostgreSQL's SQL)."""
    with module_store_url(request, "filters") as url:
        eng = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        if eng.dialect.name == "sqlite":  # the search triggers read the text through it
            event.listen(eng, "connect", lambda conn, _record: compression.register(conn))
        metadata.create_all(eng)
        yield eng
        eng.dispose()


def select_names(engine: Engine, docs: list[dict[str, Any]], node: Node) -> set[str]:
    rows = [
        {
            "name": f"documents/d{i}",
            "data_source": doc.get("dataSource"),
            "uri": doc.get("uri"),
            "update_time": doc.get("updateTime"),
            "content_length_bytes": doc.get("contentLengthBytes"),
            "fetched_at": 0.0,
            "upstream": "test",
        }
        for i, doc in enumerate(docs)
    ]
    with engine.begin() as conn:
        conn.execute(delete(documents))
        if rows:
            conn.execute(insert(documents), rows)
        found = conn.execute(select(documents.c.name).where(to_sql(node, documents)))
        return {name for (name,) in found}


def python_names(docs: list[dict[str, Any]], node: Node) -> set[str]:
    return {f"documents/d{i}" for i, doc in enumerate(docs) if evaluate(node, doc)}


def test_sql_agrees_on_the_table_examples(engine: Engine) -> None:
    docs = [DOC, {}, {"dataSource": "x", "updateTime": "garbage", "contentLengthBytes": 3}]
    for text in [
        'data_source = "web.dev"',
        'NOT data_source = "x"',
        'data_source != "x"',
        'update_time < "2025-03-01T11:30:00Z"',
        'NOT update_time < "2025-03-01T11:30:00Z"',
        "content_length_bytes < 5 OR -content_length_bytes < 5",
        # U+0000 is valid in a filter string; PostgreSQL text cannot hold it (filter_sql.Utf8).
        'data_source = "web\0dev"',
        'data_source != "web\0dev"',
        "content_length_bytes < 9223372036854775807",
    ]:
        node = parse(text)
        assert node is not None
        assert select_names(engine, docs, node) == python_names(docs, node), text


def test_sql_compiles_for_postgresql_and_refuses_other_dialects() -> None:
    node = parse('update_time > "2025-01-01T00:00:00Z" AND NOT data_source = "x"')
    assert node is not None
    clause = to_sql(node, documents)
    sql = str(clause.compile(dialect=postgresql.dialect()))
    assert "make_interval" in sql and 'COLLATE "C"' in sql and "NOT coalesce(" in sql
    with pytest.raises(CompileError, match="update_time filters"):
        clause.compile(dialect=mysql.dialect())
    # Other fields compile to plain comparisons, which an index on the column can serve.
    plain = to_sql(ds("web.dev"), documents).compile(dialect=mysql.dialect())
    assert str(plain) == "documents.data_source = %s"


# --- properties ---------------------------------------------------------------------------------

# A few instants, so that generated filters and documents often meet exactly.
INSTANTS = [
    datetime(2026, 1, 1, 0, 0, 0),
    datetime(2026, 1, 1, 0, 0, 1),
    datetime(2025, 12, 31, 23, 59, 59),
    datetime(2024, 2, 29, 12, 0, 0),
    datetime(1970, 1, 1, 0, 0, 0),
]
FRACTIONS = ["", ".0", ".5", ".500", ".000000001", ".123456789", ".1234567891", ".999"]
OFFSETS = ["Z", "z", "+00:00", "-00:00", "+05:30", "-08:00", "+14:00", "+23:59", "-23:59"]
BAD_TIMES = [
    "garbage",
    "",
    "2026-02-29T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:60Z",
    "2026-01-01T00:00:00",
    "2026-01-01T00:00:00.Z",
    "2026-01-01T00:00:00+24:00",
    "0000-06-01T00:00:00Z",
    "0001-01-01T00:00:00+00:01",
    "9999-12-31T23:59:59-00:01",
    "2026-01-01 00:00:00Z",
    "2026-01-01T00:00:00Z\n",
    "now",
]
SOURCES = ["web.dev", "Web.dev", "firebase.google.com", "", 'a"b', "back\\slash", "ünï cödé"]
URIS = ["https://web.dev/a", "https://web.dev/a/", "https://firebase.google.com/docs"]
SIZES = [0, 1, 31842, 50000, -1, 2**31, 2**63 - 1, -(2**63)]
no_surrogates = st.characters(exclude_categories=("Cs",))


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """An RFC 3339 spelling of one of INSTANTS, in a random zone and fraction."""
    instant = draw(st.sampled_from(INSTANTS))
    offset = draw(st.sampled_from(OFFSETS))
    local = instant
    if offset not in "Zz":
        delta = timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
        local = instant + delta if offset[0] == "+" else instant - delta
    sep = draw(st.sampled_from("Tt"))
    return local.strftime(f"%Y-%m-%d{sep}%H:%M:%S") + draw(st.sampled_from(FRACTIONS)) + offset


strings = st.sampled_from(SOURCES + URIS) | st.text(no_surrogates, max_size=12)
compares = st.one_of(
    st.builds(Compare, st.just("data_source"), st.sampled_from(["=", "!="]), strings),
    st.builds(Compare, st.just("uri"), st.sampled_from(["=", "!="]), strings),
    st.builds(
        Compare,
        st.just("update_time"),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        timestamps(),
    ),
    st.builds(
        Compare,
        st.just("content_length_bytes"),
        st.sampled_from(["=", "!=", "<", "<=", ">", ">="]),
        st.sampled_from(SIZES) | st.integers(-(2**63), 2**63 - 1),
    ),
)


def flat(kind: type[And] | type[Or], items: list[Node]) -> Node:
    """The shape the parser produces: no And directly inside an And, no Or inside an Or."""
    out: list[Node] = []
    for item in items:
        out.extend(item.items if isinstance(item, kind) else (item,))
    return kind(tuple(out))


nodes = st.recursive(
    compares,
    lambda kids: st.one_of(
        st.lists(kids, min_size=2, max_size=3).map(lambda xs: flat(And, xs)),
        st.lists(kids, min_size=2, max_size=3).map(lambda xs: flat(Or, xs)),
        kids.map(Not),
    ),
    max_leaves=8,
)
field_values = {
    "dataSource": st.sampled_from(SOURCES) | st.text(no_surrogates, max_size=5),
    "uri": st.sampled_from(URIS),
    "updateTime": timestamps() | st.sampled_from(BAD_TIMES),
    "contentLengthBytes": st.sampled_from(SIZES),
}


@st.composite
def docs(draw: st.DrawFn) -> dict[str, Any]:
    """A Document's filterable fields; each may be present, null or absent."""
    doc: dict[str, Any] = {}
    for key, values in field_values.items():
        choice = draw(st.sampled_from(["value", "value", "value", "null", "absent"]))
        if choice == "value":
            doc[key] = draw(values)
        elif choice == "null":
            doc[key] = None
    return doc


@given(nodes)
def test_to_text_then_parse_gives_the_same_ast(node: Node) -> None:
    text = to_text(node)
    if len(text) > MAX_FILTER_LENGTH:
        with pytest.raises(InvalidFilter) as info:
            parse(text)
        assert info.value.position == MAX_FILTER_LENGTH
        return
    assert parse(text) == node
    assert to_text(parse(text)) == text  # type: ignore[arg-type]
    assert validate(text) == text


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(nodes, st.lists(docs(), max_size=12))
def test_sql_selects_exactly_what_python_accepts(
    engine: Engine, node: Node, documents_: list[dict[str, Any]]
) -> None:
    documents_ = storable(engine, documents_)
    assert select_names(engine, documents_, node) == python_names(documents_, node)


def storable(engine: Engine, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`docs` as this database can store them. PostgreSQL text holds no U+0000 (upstream
    never sends one; a filter value with one is still compared, by filter_sql.Utf8) and its
    content_length_bytes column is 32-bit (pages are far below 2 GiB; filter values stay 64-bit)."""
    if engine.dialect.name != "postgresql":
        return docs
    low, high = -(2**31), 2**31 - 1

    def fit(key: str, value: Any) -> Any:
        if isinstance(value, str):
            return value.replace("\0", "\1")
        if key == "contentLengthBytes" and isinstance(value, int):
            return min(max(value, low), high)
        return value

    return [{key: fit(key, value) for key, value in doc.items()} for doc in docs]


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(timestamps() | st.sampled_from(BAD_TIMES), min_size=1, max_size=10))
def test_sql_instant_keys_match_python(engine: Engine, stored: list[str]) -> None:
    # Every stored spelling against every literal: equal, ordered and invalid alike.
    docs_ = storable(engine, [{"updateTime": value} for value in stored])
    for value in stored:
        if instant_key(value) is None:
            continue
        for op in ["=", "<", ">="]:
            node = Compare("update_time", op, value)
            assert select_names(engine, docs_, node) == python_names(docs_, node)


def unescaped_quotes(text: str) -> list[int]:
    out, escaped = [], False
    for i, c in enumerate(text):
        if c == '"' and not escaped:
            out.append(i)
        escaped = c == "\\" and not escaped
    return out


@given(nodes, st.data())
def test_mutated_filters_fail_with_a_position_inside_the_text(
    node: Node, data: st.DataObject
) -> None:
    text = to_text(node)
    kind = data.draw(st.sampled_from(["quote", "field", "operator", "paren", "trailing"]))
    if kind == "quote":
        quotes = unescaped_quotes(text)
        if not quotes:
            return  # only integers in this filter
        i = data.draw(st.sampled_from(quotes))
        bad = text[:i] + text[i + 1 :]
    elif kind == "field":
        name = data.draw(st.sampled_from(["dataSource", "title", "name", "updateTime", "size"]))
        bad, spot = f'{text} AND {name} = "x"', len(text) + 5
    elif kind == "operator":
        op = data.draw(st.sampled_from(["<", ">=", "=~", "==", ":", "!", "<>", "=<"]))
        bad = f'{text} OR data_source {op} "x"'
    elif kind == "paren":
        bad = data.draw(st.sampled_from([f"({text}", f"{text})", f"(({text})", f"{text} ()"]))
    else:
        bad = text + data.draw(st.sampled_from([" AND", " OR", " NOT", " -", " AND NOT"]))
    with pytest.raises(InvalidFilter) as info:
        parse(bad)
    assert 0 <= info.value.position <= len(bad)
    if kind == "field" and len(bad) <= MAX_FILTER_LENGTH:
        assert info.value.position == spot


TOKENS = ['"x"', '"', "(", ")", "=", "!=", "<", ">=", "AND", "OR", "NOT", "-", "and", "5", "uri"]


@given(
    st.text(no_surrogates, max_size=60)
    | st.lists(
        st.sampled_from([*TOKENS, "data_source", "update_time", '"2025-01-01T00:00:00Z"'])
    ).map(" ".join)
)
def test_any_text_parses_or_fails_with_invalid_filter(text: str) -> None:
    try:
        node = parse(text)
    except InvalidFilter as exc:
        assert 0 <= exc.position <= len(text)
        assert f"at column {exc.position}" in exc.message
    else:
        if node is not None:
            assert parse(to_text(node)) == node
