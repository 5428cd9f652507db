"""The docset's Info.plist, and the feed Dash and Zeal poll with the archive it points to."""

from __future__ import annotations

import gzip
import hashlib
import io
import plistlib
import tarfile
from pathlib import PurePosixPath
from xml.sax.saxutils import escape

# gzip's level: 6 packs the chrome corpus' pages within 3% of 9, in half the time.
_LEVEL = 6


def info_plist(bundle_id: str, title: str, keyword: str) -> bytes:
    """Info.plist: the docset's identity, its search keyword and its start page."""
    info = {
        "CFBundleIdentifier": bundle_id,
        "CFBundleName": title,
        "DocSetPlatformFamily": keyword,
        "isDashDocset": True,
        "isJavaScriptEnabled": False,
        "dashIndexFilePath": "index.html",
    }
    return plistlib.dumps(info, sort_keys=True)


class Archive:
    """A .tgz of files added one by one (paths as given, in the order given), packed as they
    come so memory holds the compressed archive, not the files; the same bytes for the same
    files: no times, owners or modes from this machine."""

    def __init__(self) -> None:
        self._raw = io.BytesIO()
        self._packed = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=_LEVEL, mtime=0)
        # Closed by finish(): the archive outlives this call.
        self._tar = tarfile.open(fileobj=self._packed, mode="w", format=tarfile.PAX_FORMAT)  # noqa: SIM115
        self._folders: set[PurePosixPath] = set()

    def add(self, path: PurePosixPath, data: bytes) -> None:
        """Add one file (and, the first time, each folder above it)."""
        for parent in reversed(path.parents[:-1]):
            if parent not in self._folders:
                self._folders.add(parent)
                self._tar.addfile(_entry(str(parent), tarfile.DIRTYPE, 0o755))
        self._tar.addfile(_entry(str(path), tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))

    def finish(self) -> bytes:
        """The archive's bytes (no file may be added after)."""
        self._tar.close()
        self._packed.close()
        return self._raw.getvalue()


def _entry(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def feed(archive_url: str, data: bytes) -> bytes:
    """The Dash feed: the archive's URL and a version that changes when its bytes do."""
    version = hashlib.sha256(data).hexdigest()[:12]
    return (
        f"<entry>\n  <version>{version}</version>\n  <url>{escape(archive_url)}</url>\n</entry>\n"
    ).encode()
