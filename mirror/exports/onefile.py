"""Writing an export that is one file (zim): all or nothing, and nothing when nothing changed.

A folder export compares each file's bytes; one big file cannot be compared that way without
making it first. So the file stores a digest of what it was made from (every selected page's
fields and content, the format, its options and dk-mirror's version), and a re-export computes
the digest from the store (one read of the pages, no rendering) and writes nothing when it
matches. Otherwise the format writes the whole file under a temporary name beside OUT, renamed
over OUT only when complete, so Ctrl-C or a full disk never leaves a partial file under its
name (and the temporary file, with anything the format's library made beside it, is removed).

An existing OUT that this format did not write (stored_digest is None) is never replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InvalidInput
from ..files import cannot_write
from ..models import Document
from .base import FileFormat, Pages


def check_target(out: Path, format_name: str) -> None:
    """Refuse an OUT that cannot hold this export, before any page is read."""
    if out.is_dir():
        raise InvalidInput(
            f"{out} is a folder; a {format_name} export is one file",
            hint=f"give a file path, e.g. docs.{format_name}",
        )
    if not out.parent.is_dir():
        raise InvalidInput(
            f"the folder of {out} does not exist", hint="create it first, or give another path"
        )


def content_digest(
    format_name: str, options: Mapping[str, Any], prefix: str | None, docs: Iterable[Document]
) -> str:
    """What a one-file export is made from, as one sha256: equal digests, equal content."""
    digest = hashlib.sha256()
    head = {"dk-mirror": __version__, "format": format_name, "options": options, "prefix": prefix}
    digest.update(json.dumps(head, sort_keys=True, default=str).encode() + b"\n")
    for doc in docs:
        fields = [doc.name, doc.title, doc.description, doc.uri, doc.update_time, doc.content]
        digest.update(json.dumps(fields, ensure_ascii=False).encode() + b"\n")
    return "sha256:" + digest.hexdigest()


def write(run: FileFormat, format_name: str, out: Path, pages: Pages, digest: str) -> bool:
    """Make OUT from `pages` unless it already holds `digest`; True when it was written."""
    if out.is_file():
        stored = run.stored_digest(out)
        if stored is None:
            raise InvalidInput(
                f"{out} exists and is not a dk-mirror {format_name} export",
                hint="delete it or choose another file name (it is never overwritten)",
            )
        if stored == digest:
            return False
    temp = out.with_name(f".{out.name}.{secrets.token_hex(6)}.tmp")
    try:
        run.write(pages, temp, digest)
        os.replace(temp, out)
    except BaseException as exc:
        _remove_leftovers(temp)
        if isinstance(exc, OSError):
            raise cannot_write(out, exc) from exc
        raise
    return True


def _remove_leftovers(temp: Path) -> None:
    # The temporary file, and what a library made beside it under names that start with it
    # (libzim: `<name>.tmp`, and the folders of its full-text index while it builds it).
    # Listed by prefix, not glob: OUT's name may hold `[` or `*`.
    beside = [temp.parent / n for n in os.listdir(temp.parent) if n.startswith(temp.name)]
    for path in [temp, *beside]:
        with contextlib.suppress(OSError):
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
