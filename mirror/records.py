"""Reading Document records from JSON Lines files (plain or gzip), as in tests/data/corpus.

Streamed with bounded memory (mirror/lines.py): a record longer than the document limit is
refused before it is parsed, naming its line and, when it can be found, its document.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

from .config import DEFAULT_MAX_DOCUMENT_BYTES, ENV_MAX_DOCUMENT_BYTES
from .errors import InvalidInput, MirrorError
from .lines import GZIP_MAGIC, Line, LineReader, blocks
from .models import Document
from .names import normalize


def _too_long(where: str, line: Line, limit: int) -> InvalidInput:
    what = f"document {line.name!r}" if line.name else "a record (its name was not found)"
    size = f"is {line.length} bytes" if line.ended else f"is more than {line.length} bytes"
    return InvalidInput(
        f"{where} line {line.number}: {what} {size}, over the limit of {limit} bytes",
        hint=f"if the document is genuine, raise --max-document-bytes or {ENV_MAX_DOCUMENT_BYTES};"
        " nothing was imported",
    )


def _parse(lines: Iterable[Line], where: str, limit: int) -> Iterator[Document]:
    number = 0
    try:
        for line in lines:
            number = line.number
            if line.too_long:
                raise _too_long(where, line, limit)
            try:
                # -sig: a file saved with a byte-order mark (Windows editors) reads as well.
                data = json.loads(line.data.decode("utf-8-sig"))
            except UnicodeDecodeError as exc:
                raise InvalidInput(
                    f"{where} line {number}: not UTF-8 ({exc.reason} at byte {exc.start})",
                    hint="each line must be one Document object in UTF-8, as the API returns it",
                ) from None
            except json.JSONDecodeError as exc:
                raise InvalidInput(
                    f"{where} line {number}: not JSON ({exc.msg} at column {exc.colno})",
                    hint="each line must be one Document object (JSON), as the API returns it",
                ) from None
            try:
                doc = Document.from_api(data)
                if normalize(doc.name) != doc.name:
                    raise InvalidInput(f"name {doc.name!r} is not in canonical form")
            except MirrorError as exc:
                raise InvalidInput(
                    f"{where} line {number}: {exc.message}",
                    hint="each line must be a Document with a `name` like documents/{host}/{path}",
                ) from None
            if doc.content is None:
                raise InvalidInput(
                    f"{where} line {number}: {doc.name} has no `content`",
                    hint="import full documents (DOCUMENT_VIEW_CONTENT records)",
                )
            yield doc.with_derived_fields()
    except (OSError, EOFError) as exc:
        # A truncated or corrupt gzip stream: refuse the whole file, import nothing.
        raise InvalidInput(
            f"{where}: unreadable after line {number}: {exc}",
            hint="the file looks truncated or corrupt; export or download it again",
        ) from None


def _documents(open_raw: Callable[[], IO[bytes]], where: str, limit: int) -> Iterator[Document]:
    # Opened when iteration starts, inside the `with`: a stream dropped before its first item
    # (an import that failed early) leaves no file open behind it.
    with open_raw() as raw:
        compressed = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        reader = LineReader(blocks(raw, compressed=compressed), limit=limit)
        held = 0
        for doc in _parse(reader, where, limit):
            held += 1
            yield doc
    if not held:
        # A file of nothing (or of blank lines only: a gzip of 2 GiB of newlines) is not an
        # export of anything; saying "imported 0" would pass a broken pipeline as a success.
        blank = f" (only {reader.blank_lines} blank line(s))" if reader.blank_lines else ""
        raise InvalidInput(
            f"{where} holds no Document records{blank}",
            hint="each line must be one Document object (JSON), as the API returns it; "
            "nothing was imported",
        )


def iter_documents(
    path: Path, *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> Iterator[Document]:
    """Documents of a .jsonl or .jsonl.gz file, streamed; a bad line raises InvalidInput.

    The file is checked now (so a bad path fails before anything else happens) and read as the
    result is iterated; a caller that must be all-or-nothing writes inside one transaction.
    """
    try:
        path.open("rb").close()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", hint="check the path") from None
    return _documents(lambda: path.open("rb"), str(path), max_document_bytes)


def read_documents(
    path: Path, *, max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
) -> list[Document]:
    """Every Document in a .jsonl or .jsonl.gz file as a list (small files, benchmarks)."""
    return list(iter_documents(path, max_document_bytes=max_document_bytes))


def iter_sample() -> Iterator[Document]:
    """The sample documents shipped inside the package, streamed."""
    from importlib.resources import files

    resource = files("mirror.sample").joinpath("docs.jsonl.gz")
    return _documents(lambda: resource.open("rb"), "sample docs", DEFAULT_MAX_DOCUMENT_BYTES)


def read_sample() -> list[Document]:
    """The sample documents shipped inside the package."""
    return list(iter_sample())
