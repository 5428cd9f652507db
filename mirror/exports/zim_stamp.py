"""Fixed bytes where libzim writes random ones, so two ZIMs of the same pages are identical.

Two exports of the same pages differ in exactly these bytes (found by comparing two exports
byte by byte; libzim 9, python-libzim 3.13), and nothing else (no timestamp):

- the ZIM header's `uuid` (16 bytes at offset 8, after magic, major and minor version): libzim
  draws it at random and its Python binding cannot set it;
- the uuid of each Xapian database libzim embeds (the full-text and title indexes: entries of
  namespace X, mimetype `application/octet-stream+xapian`). Each is a single-file glass
  database that begins with its version record (Xapian's glass_version.cc): the 14-byte magic
  "\\x0f\\x0dXapian Glass", 2 bytes of format version, then the 16-byte uuid drawn by
  `uuid_generate` when the database is created. libzim stores these entries in uncompressed
  clusters (its XapianHandler is not compressible), so the uuid can be rewritten in place;
- the MD5 checksum (the 16 bytes at the header's `checksumPos`, the end of the file), which
  covers all of the above, so it is computed again.

The new uuids are name-based (uuid5) on the export's content digest: the same pages give the
same uuids, other pages or another prefix other ones (Kiwix tells books apart by this uuid).

Every assumption about the layout is checked before a byte is written, and the checksum libzim
wrote must match the file as read: if anything differs (another libzim), the file is left as
libzim wrote it, valid but not byte-identical, and the reason is returned for a note.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from pathlib import Path
from typing import BinaryIO

# The ZIM header (openZIM format; libzim's fileheader.cpp): magic, major, minor, uuid, entry
# count, cluster count, pathPtrPos, titlePtrPos, clusterPtrPos, mimeListPos, mainPage,
# layoutPage, checksumPos; little-endian.
_HEADER = struct.Struct("<IHH16sIIQQQQIIQ")
_ZIM_MAGIC = 72173914
_ZIM_MAJORS = (5, 6)
_UUID_AT = 8
_CHECKSUM_BYTES = 16
# A dirent of an item: mimetype index, parameter length, namespace, revision, cluster, blob;
# then its path and title, each ending with NUL.
_DIRENT = struct.Struct("<HBcIII")
_REDIRECT, _LINKTARGET, _DELETED = 0xFFFF, 0xFFFE, 0xFFFD
_XAPIAN_MIMETYPE_END = b"+xapian"
# A cluster's first byte: compression in the low 4 bits (0 and 1: none), 0x10 when its blob
# offsets are 8 bytes rather than 4; the offsets follow, counted from after that byte.
_UNCOMPRESSED = (0, 1)
_EXTENDED = 0x10
_GLASS_MAGIC = b"\x0f\x0dXapian Glass"
_GLASS_UUID_AT = 16
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "dk-mirror:export:zim")
_CHUNK = 1 << 20
_MIMELIST_MAX = 1 << 16
_PATH_MAX = 4096


class _Unexpected(Exception):
    """The file is not laid out as this module knows libzim's output."""


def stamp(path: Path, digest: str) -> str | None:
    """Give the finished ZIM at `path` fixed uuids derived from `digest` and a new checksum.
    Returns None when done, or why the file was left as libzim wrote it."""
    with path.open("r+b") as file:
        try:
            patches = _patches(file, digest)
            checksum_at = _checksum_position(file)
            checksum = _checksum(file, checksum_at, patches)
        except _Unexpected as exc:
            return str(exc)
        for offset, data in [*patches, (checksum_at, checksum)]:
            file.seek(offset)
            file.write(data)
    return None


def _patches(file: BinaryIO, digest: str) -> list[tuple[int, bytes]]:
    """(offset, new bytes) of every random uuid: the header's, then each Xapian database's."""
    patches = [(_UUID_AT, uuid.uuid5(_NAMESPACE, digest).bytes)]
    for at, name in _xapian_uuids(file):
        patches.append((at, uuid.uuid5(_NAMESPACE, f"{digest}#{name}").bytes))
    return patches


def _header(file: BinaryIO) -> tuple[int, ...]:
    fields = _HEADER.unpack(_read(file, 0, _HEADER.size))
    if fields[0] != _ZIM_MAGIC or fields[1] not in _ZIM_MAJORS:
        raise _Unexpected("not a ZIM file of a known version")
    return fields


def _checksum_position(file: BinaryIO) -> int:
    at: int = _header(file)[-1]
    if at + _CHECKSUM_BYTES != file.seek(0, 2):
        raise _Unexpected("the ZIM's checksum is not its last 16 bytes")
    return at


def _xapian_uuids(file: BinaryIO) -> list[tuple[int, str]]:
    """The offset of each embedded Xapian database's uuid, with the entry's path."""
    _, _, _, _, entries, clusters, path_ptrs, _, cluster_ptrs, mimelist, *_ = _header(file)
    xapian = {
        i for i, m in enumerate(_mimetypes(file, mimelist)) if m.endswith(_XAPIAN_MIMETYPE_END)
    }
    found = []
    for pointer in struct.unpack(f"<{entries}Q", _read(file, path_ptrs, 8 * entries)):
        mimetype, _, namespace, _, cluster, blob = _DIRENT.unpack(
            _read(file, pointer, _DIRENT.size)
        )
        if mimetype in (_REDIRECT, _LINKTARGET, _DELETED) or mimetype not in xapian:
            continue
        name = _string(file, pointer + _DIRENT.size, namespace.decode("latin-1"))
        if namespace != b"X" or cluster >= clusters:
            raise _Unexpected(f"the Xapian entry {name} is not where libzim puts its indexes")
        (cluster_at,) = struct.unpack("<Q", _read(file, cluster_ptrs + 8 * cluster, 8))
        start = _blob_start(file, cluster_at, blob, name)
        if _read(file, start, len(_GLASS_MAGIC)) != _GLASS_MAGIC:
            raise _Unexpected(f"the Xapian entry {name} is not a glass database")
        found.append((start + _GLASS_UUID_AT, name))
    return found


def _mimetypes(file: BinaryIO, at: int) -> list[bytes]:
    names = _read_some(file, at, _MIMELIST_MAX).split(b"\0")
    if b"" not in names:
        raise _Unexpected("the ZIM's mimetype list has no end")
    return names[: names.index(b"")]


def _blob_start(file: BinaryIO, cluster_at: int, blob: int, name: str) -> int:
    """Where blob `blob` of the uncompressed cluster at `cluster_at` starts in the file."""
    (info,) = _read(file, cluster_at, 1)
    if info & 0x0F not in _UNCOMPRESSED:
        raise _Unexpected(f"the Xapian entry {name} is compressed")
    size = 8 if info & _EXTENDED else 4
    unpack = struct.Struct("<QQ" if size == 8 else "<II").unpack
    # The first offset is the size of the offset table: one offset per blob, and the end.
    first: int = unpack(_read(file, cluster_at + 1, 2 * size))[0]
    if blob + 1 >= first // size:
        raise _Unexpected(f"the Xapian entry {name} points past its cluster")
    begin: int
    end: int
    begin, end = unpack(_read(file, cluster_at + 1 + size * blob, 2 * size))
    if end - begin < _GLASS_UUID_AT + 16:
        raise _Unexpected(f"the Xapian entry {name} is too short")
    return cluster_at + 1 + begin


def _checksum(file: BinaryIO, end: int, patches: list[tuple[int, bytes]]) -> bytes:
    """The MD5 of the first `end` bytes once patched; checks on the way that libzim's checksum
    is the MD5 of them as they are (so the layout read above is the file's)."""
    if any(offset < 0 or offset + len(data) > end for offset, data in patches):
        raise _Unexpected("a uuid lies outside the bytes the checksum covers")
    before, after = hashlib.md5(), hashlib.md5()
    file.seek(0)
    done = 0
    while done < end:
        chunk = file.read(min(_CHUNK, end - done))
        if not chunk:
            raise _Unexpected("the ZIM ends before its checksum")
        before.update(chunk)
        patched = bytearray(chunk)
        for offset, data in patches:
            low, high = max(offset, done), min(offset + len(data), done + len(chunk))
            if low < high:
                patched[low - done : high - done] = data[low - offset : high - offset]
        after.update(patched)
        done += len(chunk)
    if before.digest() != _read(file, end, _CHECKSUM_BYTES):
        raise _Unexpected("the ZIM's checksum does not match its bytes")
    return after.digest()


def _string(file: BinaryIO, at: int, namespace: str) -> str:
    path = _read_some(file, at, _PATH_MAX).split(b"\0", 1)[0]
    return f"{namespace}/{path.decode('utf-8', 'replace')}"


def _read(file: BinaryIO, at: int, size: int) -> bytes:
    data = _read_some(file, at, size)
    if len(data) != size:
        raise _Unexpected("the ZIM is shorter than its header says")
    return data


def _read_some(file: BinaryIO, at: int, size: int) -> bytes:
    file.seek(at)
    return file.read(size)
