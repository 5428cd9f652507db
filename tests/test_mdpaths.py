"""Markdown tree paths: injective, safe on Linux, macOS and Windows, and confined to the export."""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mirror.errors import InvalidInput, InvalidName
from mirror.models import Document
from mirror.snapshots import mdpaths
from mirror.snapshots.mdpaths import (
    UnsafePath,
    check_inside,
    front_matter,
    index_markdown,
    relative_path,
)

WINDOWS_FORBIDDEN = set('<>:"/\\|?*') | {chr(c) for c in range(32)}
WINDOWS_DEVICES = {"con", "prn", "aux", "nul", "conin$", "conout$"} | {
    f"{p}{n}" for p in ("com", "lpt") for n in range(10)
}


def platform_problems(path: PurePosixPath) -> list[str]:
    """Why `path` is not a safe relative file path on Linux, macOS and Windows (empty: it is)."""
    text = str(path)
    problems = []
    if path.is_absolute() or re.match(r"^[A-Za-z]:", text) or text.startswith("\\"):
        problems.append("absolute or drive path")
    if "\\" in text:
        problems.append("backslash")
    for part in text.split("/"):
        if part in ("", ".", ".."):
            problems.append(f"component {part!r}")
        if set(part) & WINDOWS_FORBIDDEN or "\x7f" in part:
            problems.append(f"forbidden character in {part!r}")
        if part.endswith((" ", ".")):
            problems.append(f"trailing dot or space in {part!r}")
        # Windows matches device names case-insensitively, before any extension, spaces ignored.
        if part.split(".", 1)[0].rstrip(" ").lower() in WINDOWS_DEVICES:
            problems.append(f"Windows device name {part!r}")
        if len(part.encode("utf-8")) > 255 or len(part) > mdpaths.MAX_COMPONENT:
            problems.append(f"component too long ({len(part)})")
        if not part.isascii():
            problems.append("non-ASCII (macOS would normalise it)")
    if not text.endswith(".md"):
        problems.append("not a .md file")
    return problems


ADVERSARIAL = [
    "",
    ".",
    "..",
    "...",
    "\\",
    ":",
    "a:b",
    "c:",
    "\x00",
    "\x01\x1f",
    "\x7f",
    "a" * 300,
    "a" * 116,
    "a" * 117,
    "a" * 118,
    "é" * 60,
    "é",  # NFC
    "e\u0301",  # NFD of the same
    "Å",
    "A\u030a",
    "\u212b",  # ANGSTROM SIGN, NFC-normalises to Å
    "A",
    "a",
    "K",
    "k",
    "\u212a",  # KELVIN SIGN, case-folds to k
    "ß",
    "ss",
    "SS",
    "CON",
    "con",
    "Con",
    "con.md",
    "CON.md",
    "con.txt",
    "nul",
    "NUL.tar.gz",
    "aux",
    "prn",
    "com1",
    "COM9",
    "lpt1.md",
    "com\u00b9",
    "conin$",
    "CONOUT$",
    "x.",
    "x ",
    " ",
    " x",
    ".x",
    "index",
    "Index",
    "INDEX",
    "index.md",
    "x",
    "x.md",
    "x.MD",
    ".md",
    "%",
    "%41",
    "%2E",
    "~",
    "a~0123456789abcdef",
    '<>:"|?*',
    "a/b",
    "\u2028",
]
segments = st.one_of(
    st.sampled_from(ADVERSARIAL),
    st.text(alphabet=st.sampled_from("aAbB.-_ %~:\\é\u0301$"), max_size=12),
    st.text(max_size=8),
)
hosts = st.one_of(
    st.sampled_from(["x.com", "X.com", "developer.chrome.com", "con", "x.com.md", "index", ""]),
    segments,
)
names = st.builds(
    lambda host, segs: "/".join(["documents", host, *segs]),
    hosts,
    st.lists(segments, max_size=4),
)


def folded(path: PurePosixPath) -> set[str]:
    """The forms a file system might treat as the same file."""
    text = str(path)
    return {
        unicodedata.normalize(form, text).casefold() for form in ("NFC", "NFD", "NFKC", "NFKD")
    } | {text.lower(), text.upper()}


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(names, min_size=1, max_size=40, unique=True))
@example(["documents/h", "documents/h/index", "documents/h/index.md/z", "documents/h/x.md/y"])
@example(["documents/h/x", "documents/h/x.md/y", "documents/h/X", "documents/h/con.md"])
def test_paths_are_injective_safe_and_never_a_directory_of_another(raw: list[str]) -> None:
    paths = {name: relative_path(name) for name in raw}
    # Injective even as a case-insensitive, Unicode-normalising file system sees them.
    seen: dict[str, str] = {}
    for name, path in paths.items():
        assert not platform_problems(path), (name, path, platform_problems(path))
        for form in folded(path):
            assert seen.setdefault(form, name) == name, (name, seen[form], path)
    directories = {
        form
        for path in paths.values()
        for i in range(1, len(path.parts))
        for form in folded(PurePosixPath(*path.parts[:i]))
    }
    for name, path in paths.items():
        assert not folded(path) & directories, (name, path)


@settings(max_examples=50, deadline=None)
@given(st.lists(names, min_size=1, max_size=25, unique=True))
def test_writing_the_files_works_and_stays_inside_the_root(raw: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "export"
        root.mkdir()
        for name in raw:
            target = check_inside(root, relative_path(name))
            assert target.is_relative_to(root.resolve())
            target.parent.mkdir(parents=True, exist_ok=True)
            assert not target.exists(), name
            target.write_bytes(name.encode("utf-8"))
        written = sorted(p for p in root.rglob("*") if p.is_file())
        assert len(written) == len(raw)
        assert sorted(p.read_bytes().decode("utf-8") for p in written) == sorted(raw)


@given(segments, st.booleans())
def test_components_decode_back_to_their_segment(segment: str, leaf: bool) -> None:
    component = mdpaths._component(segment, leaf=leaf)
    body = component.removesuffix(".md") if leaf else component
    assert leaf == component.endswith(".md")
    if "~" not in body:
        assert unquote(body, errors="strict") == segment


@pytest.mark.parametrize(
    ("name", "path"),
    [
        (
            "documents/developer.chrome.com/docs/extensions/mv3/intro",
            "developer.chrome.com/docs/extensions/mv3/intro.md",
        ),
        ("documents/developer.chrome.com", "developer.chrome.com/index.md"),
        ("documents/developer.chrome.com/index", "developer.chrome.com/%69ndex.md"),
        ("documents/x.com/docs/Activity", "x.com/docs/%41ctivity.md"),
        ("documents/x.com/a/con", "x.com/a/%63on.md"),
        ("documents/x.com/a/x.md/y", "x.com/a/x%2Emd/y.md"),
        ("documents/x.com/a/x.md", "x.com/a/x.md.md"),
        ("documents/x.com/a/..", "x.com/a/%2E%2E.md"),
        ("documents/x.com/100%", "x.com/100%25.md"),
        ("documents/x.com/caf\u00e9", "x.com/caf%C3%A9.md"),
        ("documents/x.com/cafe\u0301", "x.com/cafe%CC%81.md"),
    ],
)
def test_common_names_stay_readable(name: str, path: str) -> None:
    assert str(relative_path(name)) == path


def test_long_segments_are_shortened_with_a_hash() -> None:
    a = relative_path("documents/x.com/" + "a" * 200)
    b = relative_path("documents/x.com/" + "a" * 201)
    assert a != b
    assert a.name.startswith("a" * 50) and a.name.endswith(".md")
    assert re.fullmatch(r"a+~[0-9a-f]{16}\.md", a.name)
    assert len(a.name) <= mdpaths.MAX_COMPONENT
    # A cut never ends inside a %XX escape.
    long = relative_path("documents/x.com/" + "é" * 100).name
    assert re.fullmatch(r"(%[0-9A-F]{2})+~[0-9a-f]{16}\.md", long)


def test_only_document_names_are_mapped() -> None:
    with pytest.raises(InvalidName):
        relative_path("https://x.com/a")


@pytest.mark.parametrize(
    "bad", ["../x.md", "a/../../x.md", "/etc/passwd", "a\\..\\x.md", "c:x.md", "", "."]
)
def test_check_inside_refuses_paths_that_leave_the_root(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UnsafePath):
        check_inside(tmp_path, PurePosixPath(bad))


def test_check_inside_refuses_a_planted_symlink(tmp_path: Path) -> None:
    root = tmp_path / "export"
    (root / "x.com").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (root / "x.com" / "docs").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePath, match="outside"):
        check_inside(root, relative_path("documents/x.com/docs/a"))
    assert issubclass(UnsafePath, InvalidInput)
    ok = check_inside(root, relative_path("documents/x.com/other"))
    assert ok == (root / "x.com" / "other.md").resolve()


def _front_matter_values(block: str) -> dict[str, object]:
    lines = block.split("\n")
    assert lines[0] == "---" and lines[-2] == "---" and lines[-1] == ""
    out: dict[str, object] = {}
    for line in lines[1:-2]:
        key, _, value = line.partition(": ")
        out[key] = json.loads(value)  # every value is also valid JSON
    return out


def test_front_matter_is_deterministic_and_complete() -> None:
    doc = Document(
        name="documents/x.com/a",
        uri="https://x.com/a",
        content="# A\n",
        title='Say "hi": a\\b',
        description=None,
        data_source="x.com",
        update_time="2026-01-02T03:04:05Z",
        content_length_bytes=4,
    )
    block = front_matter(doc)
    assert block == front_matter(doc)
    assert block.splitlines()[1:4] == [
        'name: "documents/x.com/a"',
        'uri: "https://x.com/a"',
        'title: "Say \\"hi\\": a\\\\b"',
    ]
    values = _front_matter_values(block)
    assert list(values) == [
        "name",
        "uri",
        "title",
        "description",
        "dataSource",
        "updateTime",
        "contentLengthBytes",
        "sha256",
    ]
    assert values["description"] is None
    assert values["contentLengthBytes"] == 4
    assert values["sha256"] == "sha256:" + __import__("hashlib").sha256(b"# A\n").hexdigest()


@given(st.text(), st.text())
def test_front_matter_is_valid_yaml_for_any_text(title: str, description: str) -> None:
    yaml = pytest.importorskip("yaml")
    doc = Document(name="documents/x.com/a", title=title, description=description, content="x")
    block = front_matter(doc)
    assert _front_matter_values(block)["title"] == title
    loaded = yaml.safe_load(block.split("---\n")[1])
    assert loaded["title"] == title
    assert loaded["description"] == description
    assert loaded["name"] == "documents/x.com/a"


def test_index_lists_every_document_grouped_by_host_with_escaped_links() -> None:
    entries = [
        (n, t, relative_path(n))
        for n, t in [
            ("documents/y.org/b", "B [draft]"),
            ("documents/x.com/Activity", "Activity"),
            ("documents/x.com", None),
            ("documents/x.com/a b", "Spaced\ntitle"),
        ]
    ]
    text = index_markdown(entries)
    assert text == index_markdown(list(reversed(entries)))
    assert text.index("## x.com") < text.index("## y.org")
    assert "4 documents from 2 hosts." in text
    assert "[Activity](x.com/%2541ctivity.md)" in text
    assert "[B \\[draft\\]](y.org/b.md)" in text
    assert "[Spaced title](x.com/a%2520b.md)" in text
    assert "[documents/x.com](x.com/index.md)" in text
    for target in re.findall(r"\]\(([^)]*)\)", text):
        assert str(unquote(target)) in {str(p) for _, _, p in entries}
