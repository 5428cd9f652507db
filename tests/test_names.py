"""Name normalisation and validation: people paste names in three forms; one canonical form comes out."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.errors import InvalidName
from mirror.names import MAX_NAME_LENGTH, normalize, read_names, uri_of

label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
hosts = st.lists(label, min_size=2, max_size=4).map(".".join)
segment = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs", "Zs", "Zl", "Zp"),
        blacklist_characters="/#?\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85",
    ),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", "..") and s.strip() == s and not any(c.isspace() for c in s))
paths = st.lists(segment, max_size=5)


@given(hosts, paths)
def test_three_pasted_forms_give_one_canonical_name(host: str, path: list[str]) -> None:
    tail = "/".join([host, *path])
    canonical = normalize("documents/" + tail)
    assert canonical == "documents/" + tail
    assert normalize("https://" + tail) == canonical
    assert normalize("http://" + tail + "/") == canonical
    assert normalize(tail) == canonical
    assert normalize("  " + host.upper() + "/" + "/".join(path) + "#section ") == canonical


@given(st.text(max_size=80))
def test_any_text_is_canonical_or_refused_with_invalid_name(raw: str) -> None:
    try:
        name = normalize(raw)
    except InvalidName as exc:
        assert exc.message and exc.hint
        return
    assert name.startswith("documents/")
    assert normalize(name) == name  # idempotent
    assert ".." not in name.split("/")
    assert len(name) <= MAX_NAME_LENGTH


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("documents/developer.chrome.com", "documents/developer.chrome.com"),
        ("https://developer.chrome.com/", "documents/developer.chrome.com"),
        (
            "https://Developer.Chrome.com//docs/extensions/mv3/a11y/?hl=en#top",
            "documents/developer.chrome.com/docs/extensions/mv3/a11y",
        ),
        ("www.tensorflow.org/hub/caching", "documents/www.tensorflow.org/hub/caching"),
    ],
)
def test_examples(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("", "empty"),
        ("documents/a.com/../etc/passwd", "'..'"),
        ("documents/a.com/x y", "whitespace"),
        ("documents/a.com/x\x00", "control"),
        ("localhost/x", "not a host name"),
        ("documents/" + "a.com/" + "x" * 600, "at most 500"),
        ("ftp:/a.com", "not a host name"),
    ],
)
def test_refusals_say_why(raw: str, why: str) -> None:
    with pytest.raises(InvalidName, match=why):
        normalize(raw)


def test_uri_and_names_file() -> None:
    assert uri_of("documents/a.com/b/c") == "https://a.com/b/c"
    lines = ["# pinned docs\n", "\n", "a.com/x  # why\n", "https://b.org/y\n"]
    assert read_names(lines) == ["documents/a.com/x", "documents/b.org/y"]


def test_normalize_every_reports_all_invalid_names_at_once() -> None:
    from mirror.names import normalize_every

    assert normalize_every(["a.com/x", "https://b.org/y/"]) == [
        "documents/a.com/x",
        "documents/b.org/y",
    ]
    with pytest.raises(InvalidName) as caught:
        normalize_every(["a.com/x", "not a name", "documents/a.com/../y", "b.org/ok"])
    assert "2 invalid name(s)" in caught.value.message
    assert "whitespace" in caught.value.message and "'..'" in caught.value.message
