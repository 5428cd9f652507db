"""One export run: select, read, hand to the format, write incrementally, report.

The order keeps OUT honest at every moment: pages first, then the format's indexes (a format
yields them last), the notice, the removal of pages no longer selected, and the manifest last.
Ctrl-C at any point leaves whole files only, and a manifest that lists every file this run or
the one before wrote, so the next run still knows what it may remove.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..files import make_folder
from . import attribution, formats, onefile
from .base import Entry, Pages
from .source import Selection, read_documents
from .writer import Manifest, TreeWriter

if TYPE_CHECKING:
    from ..store.api import StoreAccess


@dataclass(slots=True)
class ExportReport:
    """What an export did: pages exported, files written / unchanged / removed, and notes."""

    format_name: str
    out: str
    selection: dict[str, Any]
    pages: int = 0
    files: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    bytes: int = 0
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """As `dk-mirror export --json` prints it."""
        return {
            "format": self.format_name,
            "out": self.out,
            "selection": self.selection,
            "pages": self.pages,
            "files": self.files,
            "written": self.written,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "bytes": self.bytes,
            "notes": self.notes,
        }


def export(
    store: StoreAccess,
    format_name: str,
    out: Path,
    selection: Selection,
    options: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExportReport:
    """Export the selected documents from `store` as `format_name` into the folder `out` (or
    the file `out`, for a one-file format)."""
    spec = formats.spec(format_name)
    if spec.one_file:
        return _export_file(store, spec, out, selection, dict(options or {}), progress)
    if out.exists() and not out.is_dir():
        raise InvalidInput(f"{out} is a file; an export is a folder", hint="give a folder path")
    previous = Manifest.read(out)
    if previous is not None and previous.format_name != spec.name:
        raise InvalidInput(
            f"{out} holds a `{previous.format_name}` export, not `{spec.name}`",
            hint="export each format to its own folder",
        )
    run = spec.load()(dict(options or {}))
    pages = _select(store, selection, progress)
    entries = pages.entries
    make_folder(out)  # only now: a selection of nothing leaves no empty folder behind
    writer = TreeWriter(out)
    old = previous.files if previous is not None else frozenset()
    files = run.files(pages)
    try:
        for item in files:
            writer.write(item.path, item.data)
        writer.write(attribution.NOTICE_PATH, attribution.NOTICE.encode("utf-8"))
        removed = writer.remove(old)
    except BaseException:
        # Ctrl-C, a full disk: remember everything written so far, so nothing is orphaned
        # (if even that cannot be written, the first failure is the one to report).
        with contextlib.suppress(Exception):
            Manifest(spec.name, old | writer.seen).write(out)
        raise
    finally:
        # Stopped early: the format's generator ends now (its worker processes with it),
        # not whenever the traceback that holds it is freed.
        close = getattr(files, "close", None)
        if close is not None:
            close()
    Manifest(spec.name, writer.seen).write(out)
    return ExportReport(
        format_name=spec.name,
        out=str(out),
        selection=selection.to_json(),
        pages=len(entries),
        files=len(writer.seen),
        written=writer.written,
        unchanged=writer.unchanged,
        removed=removed,
        bytes=writer.bytes,
        notes=list(run.notes),
    )


def _select(
    store: StoreAccess, selection: Selection, progress: Callable[[int, int], None] | None
) -> Pages:
    """The selected pages (InvalidInput when there are none)."""
    entries = [Entry.of(doc) for doc in read_documents(store, selection)]
    if not entries:
        raise InvalidInput(
            "no document with content matches the selection",
            hint="check --prefix, or fetch the documents first (dk-mirror fetch / crawl)",
        )
    return Pages(entries, lambda: read_documents(store, selection), progress, selection)


def _export_file(
    store: StoreAccess,
    spec: formats.Spec,
    out: Path,
    selection: Selection,
    options: dict[str, Any],
    progress: Callable[[int, int], None] | None,
) -> ExportReport:
    """A one-file export (onefile.py): rewritten whole, or not at all when nothing changed."""
    run = spec.load_file()(options)
    onefile.check_target(out, spec.name)
    pages = _select(store, selection, progress)
    # The digest reads the pages once more, quietly: the progress bar counts the writing.
    digest = onefile.content_digest(
        spec.name, options, selection.prefix, read_documents(store, selection)
    )
    written = onefile.write(run, spec.name, out, pages, digest)
    if not written:
        run.notes.append(f"{out} already holds these pages (same content digest): not rewritten")
    return ExportReport(
        format_name=spec.name,
        out=str(out),
        selection=selection.to_json(),
        pages=len(pages.entries),
        files=1,
        written=int(written),
        unchanged=int(not written),
        bytes=out.stat().st_size,
        notes=list(run.notes),
    )
