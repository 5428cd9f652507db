"""`export docset`: the docset format of the export machinery (exports/base.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..base import OutFile, Pages
from .build import DocsetSpec, docset_files


class Docset:
    """One run of the docset format: `docset_name`, `feed_url` and `workers` from its options."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        name = options.get("docset_name")
        self.spec = DocsetSpec(
            name=DocsetSpec().name if name is None else str(name),
            feed_url=options.get("feed_url") or None,
        )
        self.spec.check()  # before anything is read or written
        # Rendering processes (exports/workers.py). One by default: on the 1,984-page chrome
        # corpus one process takes 12.8 s of CPU and 95 MB, while two workers beside it
        # (each with its own renderer) took the export to 219 MB, over the 200 MB target.
        self.workers = int(options.get("workers") or 1)
        self.notes: list[str] = []

    def files(self, pages: Pages) -> Iterator[OutFile]:
        """The docset's files (see build.py), pages first, its index and feed last."""
        docs = pages.documents()
        for path, data in docset_files(docs, pages.names, self.spec, workers=self.workers):
            yield OutFile(path, data)
        if self.spec.feed_url is None:
            self.notes.append(
                "no feed written: give --feed-url URL (where OUT is served; file:// works) "
                f"for {self.spec.name}.xml and {self.spec.name}.tgz, so Dash and Zeal can update"
            )


FORMAT = Docset
