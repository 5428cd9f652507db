"""dk-mirror.toml requirements and the dk-mirror.lock file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.errors import InvalidInput
from mirror.models import Document
from mirror.snapshots.lockfile import (
    HEADER,
    LockEntry,
    LockError,
    Mismatch,
    Requirements,
    RequirementsError,
    SearchSpec,
    check_locked,
    parse_requirements,
    read_lock,
    read_lock_file,
    read_requirements,
    write_lock,
)


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


A, B, C = (f"documents/x.com/{p}" for p in ("a", "b", "c"))


# --- requirements -------------------------------------------------------------------------------


def test_requirements_file_is_read_and_normalised(tmp_path: Path) -> None:
    path = tmp_path / "dk-mirror.toml"
    path.write_text(
        """
[docs]
names = ["https://Developer.Chrome.com/docs/a#intro", "developer.chrome.com/docs/a", "documents/x.com/b"]
prefixes = ["developer.chrome.com/docs/extensions/", "x.com/api"]
searches = [
  {query = "service worker lifecycle", limit = 10, filter = 'data_source = "x.com"'},
  {query = "  manifest v3  "},
]
""",
        encoding="utf-8-sig",  # with a byte-order mark first, as Windows editors save it
    )
    req = read_requirements(path)
    assert req == Requirements(
        names=("documents/developer.chrome.com/docs/a", "documents/x.com/b"),
        prefixes=("documents/developer.chrome.com/docs/extensions/", "documents/x.com/api"),
        searches=(
            SearchSpec("service worker lifecycle", 10, 'data_source = "x.com"'),
            SearchSpec("manifest v3", 5, None),
        ),
    )


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (
            "[docs]\nsearches = [{query = 'a'}, {query = 'b', limit = 500}]",
            "docs.searches[1].limit",
            "must be 1-100 (got 500)",
        ),
        (
            "[docs]\nsearches = [{query = 'a', limit = 0}]",
            "docs.searches[0].limit",
            "must be 1-100",
        ),
        (
            "[docs]\nsearches = [{query = 'a', limit = true}]",
            "docs.searches[0].limit",
            "must be 1-100",
        ),
        ("[docs]\nsearches = [{query = ''}]", "docs.searches[0].query", "non-empty string"),
        (
            "[docs]\nsearches = [{query = 'a', filter = 'nope = 1'}]",
            "docs.searches[0].filter",
            "is not valid",
        ),
        (
            "[docs]\nsearches = [{query = 'a', fliter = 'x'}]",
            "docs.searches[0].fliter",
            "did you mean",
        ),
        ("[docs]\nsearches = ['a']", "docs.searches[0]", "must be a table"),
        ("[docs]\nsearches = {query = 'a'}", "docs.searches", "list of tables"),
        ("[docs]\nnames = ['not a name']", "docs.names[0]", "is not a document name"),
        ("[docs]\nnames = ['x.com/a', 3]", "docs.names", "list of strings"),
        ("[docs]\nnames = 'x.com/a'", "docs.names", "list of strings"),
        ("[docs]\nprefixes = ['x.com/../a']", "docs.prefixes[0]", "is not a document name"),
        ("[docs]\nprefix = ['x.com/a']", "docs.prefix", "did you mean `prefixes`"),
        ("[doc]\nnames = ['x.com/a']", "doc", "is not a known key"),
        ("[docs]\n", "docs", "lists no names, prefixes or searches"),
        ("names = ['x.com/a']", "names", "is not a known key"),
        ("", "docs", "is missing"),
        ("[docs\nnames = 1", "", "is not valid TOML"),
    ],
)
def test_requirement_errors_name_the_key(text: str, key: str, message: str) -> None:
    with pytest.raises(RequirementsError) as info:
        parse_requirements(text)
    assert info.value.key == key
    assert message in str(info.value)
    assert str(info.value).startswith(f"dk-mirror.toml: {key}")
    assert isinstance(info.value, InvalidInput)


def test_toml_errors_give_the_line() -> None:
    with pytest.raises(RequirementsError, match="line 3"):
        parse_requirements("[docs]\nnames = []\nprefixes = [1 2]\n", source="dk-mirror.toml")


def test_missing_requirements_file(tmp_path: Path) -> None:
    with pytest.raises(RequirementsError, match="cannot be read"):
        read_requirements(tmp_path / "dk-mirror.toml")


# --- lock file ----------------------------------------------------------------------------------


ENTRIES = [
    LockEntry(C, digest("c"), None),
    LockEntry(A, digest("a"), "2026-01-02T03:04:05Z"),
    LockEntry(B, digest("b"), "2026-02-03T04:05:06.123456Z"),
]


def test_lock_text_is_sorted_stable_and_round_trips() -> None:
    text = write_lock(ENTRIES)
    assert text.splitlines() == [
        HEADER,
        f"{A} {digest('a')} 2026-01-02T03:04:05Z",
        f"{B} {digest('b')} 2026-02-03T04:05:06.123456Z",
        f"{C} {digest('c')} -",
    ]
    assert text.endswith("\n")
    assert write_lock(reversed(ENTRIES)) == text
    assert read_lock(text) == sorted(ENTRIES)
    assert write_lock(read_lock(text)) == text
    assert write_lock([]) == HEADER + "\n"
    assert read_lock(HEADER + "\n") == []


@given(
    st.dictionaries(
        st.text(alphabet="abcé-_.~%", min_size=1, max_size=20),
        st.tuples(st.binary(max_size=8), st.one_of(st.none(), st.just("2026-01-01T00:00:00Z"))),
        max_size=20,
    )
)
def test_any_lock_round_trips(items: dict[str, tuple[bytes, str | None]]) -> None:
    entries = [
        LockEntry(f"documents/x.com/{k}", "sha256:" + hashlib.sha256(v).hexdigest(), t)
        for k, (v, t) in items.items()
    ]
    assert read_lock(write_lock(entries)) == sorted(entries)


def test_lock_entry_from_document_and_lock_file(tmp_path: Path) -> None:
    doc = Document(name=A, content="a", update_time="2026-01-01T00:00:00Z")
    assert LockEntry.from_document(doc) == LockEntry(A, digest("a"), "2026-01-01T00:00:00Z")
    with pytest.raises(InvalidInput, match="no content"):
        LockEntry.from_document(doc.basic())
    path = tmp_path / "dk-mirror.lock"
    # Edited on Windows: CRLF line ends, a byte-order mark first.
    path.write_bytes(("\ufeff" + write_lock(ENTRIES).replace("\n", "\r\n")).encode())
    assert read_lock_file(path) == sorted(ENTRIES)
    with pytest.raises(LockError, match="cannot be read"):
        read_lock_file(tmp_path / "missing.lock")


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (f"{A} {digest('a')}", 2, "expected `<name> sha256:<hex> <updateTime or ->`"),
        (f"{A}  {digest('a')} -", 2, "single spaces"),
        (f"{A} {digest('a')} - extra", 2, "expected"),
        (f"{A} sha256:abc -", 2, "is not sha256:<64 lower-case hex>"),
        (f"{A} {digest('a').upper()} -", 2, "is not sha256"),
        (f"{A} md5:{'0' * 32} -", 2, "is not sha256"),
        (f"x.com/a {digest('a')} -", 2, "is not a document name"),
        (f"{A} {digest('a')} -\n\n# note\n{A} {digest('b')} -", 5, f"{A} is listed twice"),
        (f"{A} {digest('a')} -\n<<<<<<< HEAD", 3, "merge conflict"),
    ],
)
def test_malformed_lock_lines_are_reported_with_their_number(
    body: str, line: int, message: str
) -> None:
    with pytest.raises(LockError) as info:
        read_lock(f"{HEADER}\n{body}\n", source="dk-mirror.lock")
    assert info.value.line == line
    assert f"dk-mirror.lock, line {line}: " in str(info.value)
    assert message in str(info.value)


def test_lock_header_is_required_and_versioned() -> None:
    with pytest.raises(LockError, match="line 1: expected the header"):
        read_lock(f"{A} {digest('a')} -\n")
    with pytest.raises(LockError, match="needs a newer dk-mirror"):
        read_lock("# dk-mirror lock v2: something\n")
    with pytest.raises(LockError, match="is empty"):
        read_lock("")


def test_write_lock_refuses_what_it_could_not_read_back() -> None:
    with pytest.raises(InvalidInput, match="twice"):
        write_lock([ENTRIES[0], ENTRIES[0]])
    with pytest.raises(InvalidInput, match="sha256"):
        write_lock([LockEntry(A, "abc")])
    with pytest.raises(InvalidInput, match="cannot be written"):
        write_lock([LockEntry("documents/x.com/a b", digest("a"))])
    with pytest.raises(InvalidInput, match="cannot be locked"):
        write_lock([LockEntry(A, digest("a"), "2026 01 01")])


# --- checking a store against the lock ----------------------------------------------------------


def test_check_locked_names_each_mismatch() -> None:
    lock = read_lock(write_lock(ENTRIES))
    have = {
        A: hashlib.sha256(b"a").hexdigest(),  # bare hex, as the store keeps it: matches
        B: digest("b changed"),
        "documents/x.com/extra": digest("x"),  # not locked: ignored
    }
    assert check_locked(lock, have) == [
        Mismatch(B, "differs", digest("b"), digest("b changed")),
        Mismatch(C, "missing", digest("c")),
    ]
    assert check_locked(lock, {A: digest("a"), B: digest("b"), C: None}) == [
        Mismatch(C, "no content", digest("c"))
    ]
    assert check_locked(lock, {A: digest("a"), B: digest("b"), C: digest("c")}) == []
    messages = [str(m) for m in check_locked(lock, {B: digest("z"), C: None})]
    assert messages[0] == f"{A}: not in the store (the lock pins {digest('a')})"
    assert messages[1].startswith(f"{B}: content is {digest('z')}")
    assert "only its metadata" in messages[2]
