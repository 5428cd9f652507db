"""The bounded line reader under import and snapshot verify: limits, blank runs, gzip bombs."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mirror.lines import BLOCK, Line, LineReader, blocks, record_name


def split_blocks(data: bytes, sizes: list[int]) -> Iterator[bytes]:
    """`data` cut into blocks of the given sizes (cycled), as an inflater might hand them out."""
    pos, i = 0, 0
    while pos < len(data):
        step = max(1, sizes[i % len(sizes)])
        yield data[pos : pos + step]
        pos, i = pos + step, i + 1


def read_all(data: bytes, sizes: list[int], **options: object) -> list[Line]:
    options.setdefault("limit", 1 << 20)
    return list(LineReader(split_blocks(data, sizes), **options))  # type: ignore[arg-type]


@given(
    lines=st.lists(
        st.one_of(st.just(b""), st.just(b"  \t"), st.binary(max_size=30).map(lambda b: b"x" + b)),
        max_size=30,
    ).map(lambda ls: [line.replace(b"\n", b"") for line in ls]),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=5),
    final_newline=st.booleans(),
)
def test_lines_are_numbered_like_the_file_whatever_the_block_boundaries(
    lines: list[bytes], sizes: list[int], final_newline: bool
) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    got = read_all(data, sizes)
    # Reference: split the file; skip blank (whitespace-only) lines; strip leading whitespace.
    want = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        stripped = line.lstrip(b" \t\r")
        if stripped:
            ended = number < len(data.split(b"\n"))
            want.append((number, stripped, ended))
    assert [(g.number, g.data, g.ended) for g in got] == want
    assert not any(g.too_long for g in got)


def test_a_line_over_the_limit_is_never_joined_and_names_its_document() -> None:
    big = json.dumps({"content": "y" * 5000, "name": "documents/example.com/big"}).encode()
    data = b'{"name":"documents/example.com/a"}\n' + big + b"\n\n\n" + b'{"c":1}\n'
    got = read_all(data, [100], limit=1024)
    assert [g.number for g in got] == [1, 2, 5]
    long = got[1]
    assert long.too_long and long.ended and long.data == b""
    assert long.length == len(big)
    assert long.name == "documents/example.com/big"  # found in the kept tail
    assert got[2].data == b'{"c":1}'


def test_a_line_without_an_end_stops_the_reading_after_a_bounded_drain() -> None:
    consumed = 0

    def endless() -> Iterator[bytes]:
        nonlocal consumed
        while True:
            consumed += 1
            yield b'{"name": "documents/example.com/bomb", "content": "' + b"z" * 999

    reader = LineReader(endless(), limit=10_000, drain=30_000)
    (only,) = list(reader)
    assert only.too_long and not only.ended and only.number == 1
    assert 40_000 < only.length <= 41_000 and consumed <= 41
    assert only.name == "documents/example.com/bomb"  # found in the kept head


def test_a_wide_line_may_grow_to_its_own_limit() -> None:
    data = b'{"manifest":' + b"m" * 5000 + b"}\n" + b'{"document":' + b"d" * 5000 + b"}\n"
    reader = LineReader(
        split_blocks(data, [333]), limit=2048, wide_prefix=b'{"manifest":', wide_limit=8192
    )
    first, second = list(reader)
    assert not first.too_long and first.data.startswith(b'{"manifest":')
    assert second.too_long


def test_blank_runs_are_skipped_in_bulk_and_counted() -> None:
    data = b"\n" * 3_000_000 + b"x\n" + b"\n" * 5
    reader = LineReader(split_blocks(data, [BLOCK]), limit=1024, skip=rb"\n*")
    (line,) = list(reader)
    assert line.number == 3_000_001 and line.data == b"x"
    assert reader.blank_lines == 3_000_005 and reader.first_blank == 1


def test_gzip_blocks_are_bounded_and_a_bomb_is_never_inflated_whole() -> None:
    inflater = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    packed = b"".join(inflater.compress(zeros) for _ in range(256)) + inflater.flush()
    assert len(packed) < 512 * 1024  # 256 MiB of zeros
    stream = blocks(io.BytesIO(packed), compressed=True)
    sizes = [len(next(stream)) for _ in range(8)]
    assert max(sizes) <= BLOCK
    reader = LineReader(blocks(io.BytesIO(packed), compressed=True), limit=1 << 20, drain=0)
    (only,) = list(reader)
    assert only.too_long and not only.ended and only.length <= 2 * (1 << 20) + BLOCK


def test_gzip_members_truncation_and_trailing_bytes() -> None:
    two = gzip.compress(b"a\n", mtime=0) + gzip.compress(b"b\n", mtime=0)
    assert b"".join(blocks(io.BytesIO(two), compressed=True)) == b"a\nb\n"
    with pytest.raises(OSError, match="after the end"):
        list(blocks(io.BytesIO(two), compressed=True, one_member=True))
    with pytest.raises(OSError, match="not gzip"):
        list(blocks(io.BytesIO(gzip.compress(b"a\n") + b"junk"), compressed=True))
    with pytest.raises(EOFError):
        list(blocks(io.BytesIO(gzip.compress(b"a\n" * 1000)[:-12]), compressed=True))


def test_record_name_ignores_a_name_inside_a_string() -> None:
    inner = json.dumps({"content": 'see "name": "documents/evil.com/x"'}).encode()
    assert record_name(inner, b"") is None
    assert record_name(b"", b'..., "name": "documents/a.dev/\\u00e9"}') == "documents/a.dev/é"
