"""Progress bars for long commands: one library (tqdm) for fetch, refresh, crawl and index.

A bar goes to stderr (stdout carries the data) and only when stderr is a terminal, so logs,
pipes and CI stay clean. tqdm keeps a total that grows as work is found and shows rate and
ETA; it is imported only when a bar is drawn, so quick and offline commands never load it.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

# Seconds between redraws while the count stands still. tqdm redraws only when enough items
# finished since its last draw, so a crawl narrowing broken links under the quota (a minute of
# paced calls that finish nothing) would freeze its clock, ETA and quota wait.
REDRAW_EVERY = 0.5
# The width a bar takes when its terminal says it has none: some CI terminals, and a new
# pseudo-terminal, report 0 columns (tqdm then drew a one-character meter, its stats cut).
FALLBACK_COLUMNS = 80


def columns(stream: TextIO) -> int | None:
    """The width of the terminal `stream` draws on, FALLBACK_COLUMNS when it reports none
    (0 columns); None when it cannot say (not a terminal's file: no limit, as before)."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None
    return width if width > 0 else FALLBACK_COLUMNS


def _stderr() -> TextIO:
    # Looked up at each use, not at import: click's test runner swaps sys.stderr per command.
    return sys.stderr


class Bar:
    """A progress bar fed absolute counts: `update(done, total)`; silent off a terminal.

    `with Bar("fetching") as progress:` hands out `update`, the callback the service takes.
    """

    def __init__(self, label: str, *, unit: str = "doc", stream: TextIO | None = None) -> None:
        self.label = label
        self.unit = unit
        self._stream = stream
        self._bar: Any = None
        self._done = 0
        self._drawn = 0.0  # time.monotonic() of the last redraw of a standing count

    @property
    def stream(self) -> TextIO:
        """Where the bar is drawn (stderr unless given)."""
        return self._stream or _stderr()

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, done: int, total: int, note: str | None = None) -> None:
        """Show `done` of `total` (the total may have grown since), with an optional `note`."""
        if self._bar is None:
            if not self.stream.isatty():
                return
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=self.label,
                unit=self.unit,
                file=self.stream,
                # The width measured here at each update (tqdm's own measure takes a terminal
                # of 0 columns at its word): a resized terminal is followed all the same.
                ncols=self._width(),
                # The average rate since the start, not a moving one: it keeps falling (and the
                # time left keeps growing) while nothing finishes, as under quota waits.
                smoothing=0,
            )
        self._bar.total = total
        self._bar.ncols = self._width()
        if note is not None:
            self._bar.set_postfix_str(note, refresh=False)
        self._bar.update(done - self._done)
        if done == self._done and time.monotonic() - self._drawn >= REDRAW_EVERY:
            self._drawn = time.monotonic()
            self._bar.refresh()
        self._done = done

    def _width(self) -> int | None:
        # One column left free, as tqdm leaves it: a line that fills the last column wraps
        # on some terminals, and each redraw would then start a new line.
        width = columns(self.stream)
        return None if width is None else width - 1

    def close(self) -> None:
        """Leave the finished bar on screen, if one was drawn."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
