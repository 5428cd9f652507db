"""Xvfb's screen (`-fbdir`: an XWD file, updated live) as a PNG, in the standard library:
what a test needs to keep and check a screenshot of a desktop program such as Zeal."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

_ZPIXMAP = 2


def read_rgb(path: Path) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of a 24/32-bit ZPixmap XWD file (what Xvfb writes)."""
    data = path.read_bytes()
    fields = struct.unpack(">25I", data[:100])
    header_size, _version, pixmap_format, depth, width, height = fields[:6]
    byte_order, bits_per_pixel, bytes_per_line, ncolors = (
        fields[7],
        fields[11],
        fields[12],
        fields[19],
    )
    red_mask = fields[15]
    if pixmap_format != _ZPIXMAP or depth != 24 or bits_per_pixel != 32:
        raise ValueError(f"unsupported XWD: format {pixmap_format}, depth {depth}/{bits_per_pixel}")
    start = header_size + ncolors * 12
    rgb = bytearray()
    for row in range(height):
        line = data[start + row * bytes_per_line : start + row * bytes_per_line + width * 4]
        for x in range(0, width * 4, 4):
            b0, b1, b2, b3 = line[x : x + 4]
            # Least significant byte first (byte_order 0) is B, G, R, X for the usual masks.
            little = (b2, b1, b0) if byte_order == 0 else (b1, b2, b3)
            rgb += bytes(little if red_mask == 0xFF0000 else little[::-1])
    return width, height, bytes(rgb)


def png_bytes(width: int, height: int, rgb: bytes) -> bytes:
    """An 8-bit RGB PNG of the pixels."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    rows = b"".join(b"\0" + rgb[y * width * 3 : (y + 1) * width * 3] for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )
