"""JSON Lines with bounded memory: lines are cut at a limit before anything parses them.

Used by `import` (mirror/records.py) and snapshot verify/import (mirror/snapshots/read.py).
Input is read and inflated in blocks of at most BLOCK bytes, so a gzip bomb never expands
further than one block past the limit; a line over the limit is never joined into one bytes
object; runs of blank lines are skipped by one regex call, not one Python step per line.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import IO

GZIP_MAGIC = b"\x1f\x8b"
# Bytes read, and at most bytes inflated, per step: large enough that per-block Python work
# is noise next to parsing, small enough that one block of a gzip bomb is harmless.
BLOCK = 1 << 18
# How much of the start and end of a too-long line is kept, to name its document.
HINT = 1 << 16
# A line over its limit is still read (not kept) for this many more bytes (or its limit again,
# if larger), to find its end and name its document; beyond that reading stops: the input is
# hostile or not JSON Lines, and inflating a bomb to its end would only burn time.
DRAIN_BYTES = 64 << 20
_NEWLINES = b"\n" * 4096
# `"name": "documents/..."` as a JSON member; a quote inside a JSON string is always escaped,
# so this cannot match inside a string value.
_NAME = re.compile(rb'"name"\s*:\s*("documents/(?:[^"\\]|\\.){0,1200}")')


@dataclass(frozen=True, slots=True)
class Line:
    """One line: its 1-based number, its bytes without the newline, and how it ended."""

    number: int
    data: bytes
    # False only for a last line that no newline ends (a truncated file, or a final line).
    ended: bool = True
    # Over the limit: `data` is empty, `length` is how many bytes were seen (the whole line
    # when `ended`), and `name` is the document name found near its start or end, if any.
    too_long: bool = False
    length: int = 0
    name: str | None = None


def blocks(raw: IO[bytes], *, compressed: bool, one_member: bool = False) -> Iterator[bytes]:
    """The bytes of `raw` in blocks of at most BLOCK, inflated when `compressed` (gzip).

    Raises EOFError for a truncated gzip stream and OSError (or zlib.error, e.g. a CRC
    mismatch) for a corrupt one; with `one_member`, bytes after the first member are refused.
    """
    if not compressed:
        while block := raw.read(BLOCK):
            yield block
        return
    inflater = zlib.decompressobj(wbits=31)  # 31: expect a gzip header and trailer
    fed = False
    while data := raw.read(BLOCK):
        while data:
            fed = True
            out = inflater.decompress(data, BLOCK)
            if out:
                yield out
            if inflater.eof:
                data = inflater.unused_data
                if one_member and data:
                    raise OSError("data after the end of the gzip stream")
                # Another member may follow (as `cat a.gz b.gz` makes); zero padding may too.
                data = data.lstrip(b"\0")
                if data and not data.startswith(GZIP_MAGIC[: len(data)]):
                    raise OSError("bytes after the end of the gzip stream are not gzip")
                inflater, fed = zlib.decompressobj(wbits=31), False
            elif inflater.unconsumed_tail or len(out) == BLOCK:
                # Output was cut at BLOCK: more is waiting for the same input.
                data = inflater.unconsumed_tail
                if not data:
                    while len(out := inflater.decompress(b"", BLOCK)) == BLOCK:
                        yield out
                    if out:
                        yield out
            else:
                data = b""
    if fed:
        rest = inflater.flush()
        if rest:
            yield rest
        if not inflater.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")


def record_name(head: bytes, tail: bytes) -> str | None:
    """The `name` of a JSON document record, looked for in the kept start and end of a line."""
    for part in (head, tail):
        match = _NAME.search(part)
        if match:
            try:
                name = json.loads(match.group(1))
            except ValueError:
                continue
            return name if isinstance(name, str) else None
    return None


class LineReader:
    """Lines of `blocks`, none longer than `limit` bytes; blank lines skipped and counted.

    `skip` matches what is skipped at the start of a line (blank lines, and for JSON Lines
    leading whitespace). A line starting with `wide_prefix` (or one of them) may be up to `wide_limit` bytes
    (a snapshot's manifest grows with its entries); callers may raise `wide_limit` as they go.
    """

    def __init__(
        self,
        blocks: Iterable[bytes],
        *,
        limit: int,
        skip: bytes = rb"[ \t\r\n]*",
        wide_prefix: bytes | tuple[bytes, ...] | None = None,
        wide_limit: int = 0,
        drain: int = DRAIN_BYTES,
    ) -> None:
        self._blocks = blocks
        self._skip = re.compile(skip)
        self.limit = limit
        self.wide_prefix = wide_prefix
        self.wide_limit = wide_limit
        self.drain = drain
        self.blank_lines = 0
        self.first_blank: int | None = None

    def _cap(self, head: bytes) -> int:
        if self.wide_prefix is not None and head.startswith(self.wide_prefix):
            return max(self.limit, self.wide_limit)
        return self.limit

    def __iter__(self) -> Iterator[Line]:
        newlines = 0  # newlines before the current line: its number is this + 1
        pieces: list[bytes] = []
        size = 0
        started = over = False
        cap = 0  # the current line's limit, decided once it passes `limit` (0 until then)
        head = tail = b""
        for block in self._blocks:
            pos, end = 0, len(block)
            while pos < end:
                if not started:
                    skipped = pos
                    # A flood of blank lines goes by at memcmp speed, a page at a time; the
                    # regex (3x slower) then takes the rest of the run.
                    while block.startswith(_NEWLINES, skipped):
                        skipped += len(_NEWLINES)
                    skipped = _end_of(self._skip.match(block, skipped), skipped)
                    if skipped > pos:
                        blank = block.count(b"\n", pos, skipped)
                        if blank:
                            if self.first_blank is None:
                                self.first_blank = newlines + 1
                            self.blank_lines += blank
                            newlines += blank
                        pos = skipped
                        continue
                    started = True
                newline = block.find(b"\n", pos)
                stop = end if newline < 0 else newline
                piece = block[pos:stop]
                size += len(piece)
                if over:
                    tail = (tail + piece)[-HINT:]
                else:
                    pieces.append(piece)
                    if size > self.limit:
                        cap = cap or self._cap(b"".join(pieces)[:64])
                        if size > cap:
                            # Keep only the ends (to name the document); drop the rest.
                            joined = b"".join(pieces)
                            head, tail, pieces, over = joined[:HINT], joined[-HINT:], [], True
                if over and size > cap + max(cap, self.drain):
                    # No end in sight: stop reading rather than inflate a bomb to its end.
                    yield Line(newlines + 1, b"", False, True, size, record_name(head, b""))
                    return
                if newline < 0:
                    break
                if over:
                    yield Line(newlines + 1, b"", True, True, size, record_name(head, tail))
                else:
                    yield Line(newlines + 1, b"".join(pieces))
                newlines += 1
                pieces, size, started, over, cap, head, tail = [], 0, False, False, 0, b"", b""
                pos = newline + 1
        if started:
            if over:
                yield Line(newlines + 1, b"", False, True, size, record_name(head, tail))
            else:
                yield Line(newlines + 1, b"".join(pieces), ended=False)


def _end_of(match: re.Match[bytes] | None, pos: int) -> int:
    # The skip pattern matches the empty string too, so there is always a match.
    return match.end() if match else pos
