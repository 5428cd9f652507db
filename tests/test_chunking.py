"""chunk_markdown: coverage, size bounds, fences, heading paths, determinism."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mirror.search.chunking import MAX_BYTES, MIN_BYTES, Chunk, chunk_markdown

_WORDS = st.sampled_from(
    ["alpha", "beta", "gamma", "service", "worker", "émigré", "数据", "ключ", "x" * 40, "`code`"]
)
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=40).map(" ".join)
_HEADING = st.tuples(st.integers(1, 6), _SENTENCE).map(lambda t: "#" * t[0] + " " + t[1])
_PARAGRAPH = st.lists(_SENTENCE, min_size=1, max_size=30).map("\n".join)
_FENCED = st.tuples(st.sampled_from(["```", "~~~", "````"]), st.lists(
    st.one_of(_SENTENCE, st.just("# fake heading in code"), st.just("")), max_size=40
)).map(lambda t: "\n".join([t[0] + "python", *t[1], t[0]]))  # fmt: skip
_LONG_LINE = st.integers(MAX_BYTES, 3 * MAX_BYTES).map(lambda n: "y" * n)
_BLOCK = st.one_of(_HEADING, _PARAGRAPH, _FENCED, _LONG_LINE, st.just(""), st.just("   "))
MARKDOWN = st.lists(_BLOCK, max_size=40).map("\n\n".join)
# Anything at all: the properties must hold for text that is not Markdown too.
ANY_TEXT = st.one_of(MARKDOWN, st.text(max_size=5000))


def _ink(text: str) -> str:
    return "".join(text.split())


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_chunks_cover_all_non_blank_content_in_order(content: str) -> None:
    chunks = chunk_markdown(content)
    assert "".join(_ink(c.text) for c in chunks) == _ink(content)
    assert all(c.text.strip() for c in chunks)
    assert [c.id for c in chunks] == [f"c{i}" for i in range(len(chunks))]


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_chunk_sizes_are_bounded_except_for_a_single_long_line(content: str) -> None:
    for chunk in chunk_markdown(content):
        if len(chunk.text.encode()) > MAX_BYTES:
            assert "\n" not in chunk.text, "only a single over-long line may exceed the limit"


@settings(max_examples=200, deadline=None)
@given(MARKDOWN)
def test_headings_inside_code_fences_are_ignored(content: str) -> None:
    assert not any("fake heading" in c.heading for c in chunk_markdown(content))


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT)
def test_chunking_is_deterministic(content: str) -> None:
    assert chunk_markdown(content) == chunk_markdown(content)


def _para(word: str, size: int = 900) -> str:
    return " ".join([word] * (size // (len(word) + 1)))


def test_heading_paths_follow_the_outline() -> None:
    content = "\n\n".join(
        [
            "# Guide {: #top }",
            _para("intro"),
            "## Install",
            _para("install", 1500),
            "### On Linux ##",
            _para("linux", 1500),
            "## Use",
            _para("use", 1500),
        ]
    )
    chunks = chunk_markdown(content)
    assert [(c.heading, c.text.split()[-1]) for c in chunks] == [
        ("Guide", "intro"),
        ("Guide > Install", "install"),
        ("Guide > Install > On Linux", "linux"),
        ("Guide > Use", "use"),
    ]
    assert chunks[1].text.startswith("## Install\n\ninstall")


def test_small_sections_merge_and_big_ones_split_at_paragraphs() -> None:
    small = "\n\n".join(f"## Part {i}\n\n{_para('p', 200)}" for i in range(4))
    assert len(chunk_markdown(small)) == 1
    big = "# Big\n\n" + "\n\n".join(_para(f"w{i}", 700) for i in range(9))
    chunks = chunk_markdown(big)
    assert len(chunks) > 2
    for chunk in chunks:
        assert MIN_BYTES // 2 < len(chunk.text.encode()) <= MAX_BYTES
        # Cut between paragraphs only: each paragraph is whole in one chunk.
        assert all(len(set(p.split())) == 1 for p in chunk.text.split("\n\n")[1:])


def test_a_code_block_with_blank_lines_is_not_cut_while_it_fits() -> None:
    code = "```js\n" + "\n\n".join(f"let v{i} = {i};" for i in range(60)) + "\n```"
    chunks = chunk_markdown(f"# Code\n\n{_para('before', 1200)}\n\n{code}\n\nafter")
    assert any(code in c.text for c in chunks)


def test_blank_content_gives_no_chunks() -> None:
    assert chunk_markdown("") == []
    assert chunk_markdown(" \n\n\t\n") == []
    assert chunk_markdown("# Only\n") == [Chunk("c0", "Only", "# Only")]
