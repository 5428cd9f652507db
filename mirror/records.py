"""Reading Document records from JSON Lines files (plain or gzip), as in shared/corpus."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from .errors import InvalidInput, MirrorError
from .models import Document
from .names import normalize

GZIP_MAGIC = b"\x1f\x8b"


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == GZIP_MAGIC:
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def _parse(lines: Iterator[str], where: str) -> list[Document]:
    docs = []
    lineno = 0
    try:
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"{where} line {lineno}: not JSON ({exc.msg} at column {exc.colno})",
                    hint="each line must be one Document object, as in shared/corpus",
                ) from None
            try:
                doc = Document.from_api(data)
                if normalize(doc.name) != doc.name:
                    raise InvalidInput(f"name {doc.name!r} is not in canonical form")
            except MirrorError as exc:
                raise InvalidInput(
                    f"{where} line {lineno}: {exc.message}",
                    hint="each line must be a Document with a `name` like documents/{host}/{path}",
                ) from None
            if doc.content is None:
                raise InvalidInput(
                    f"{where} line {lineno}: {doc.name} has no `content`",
                    hint="import full documents (DOCUMENT_VIEW_CONTENT records)",
                )
            docs.append(doc.with_derived_fields())
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        # A truncated gzip stream or bad bytes: refuse the whole file, import nothing.
        raise InvalidInput(
            f"{where}: unreadable after line {lineno}: {exc}",
            hint="the file looks truncated or corrupt; export or download it again",
        ) from None
    return docs


def read_documents(path: Path) -> list[Document]:
    """Every Document in a .jsonl or .jsonl.gz file; the first bad line fails the whole file."""
    try:
        stream = _open_text(path)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from None
    with stream:
        return _parse(iter(stream), str(path))


def read_sample() -> list[Document]:
    """The sample documents shipped inside the package."""
    from importlib.resources import files

    resource = files("mirror.sample").joinpath("docs.jsonl.gz")
    with resource.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as text:
        return _parse(iter(text), "sample docs")
