"""Links that keep turning out missing: when to stop following one page's links.

A page can link to thousands of names upstream does not have (a generated index, a page of
old URLs). Each costs quota: `batchGet` fails whole when one name is unknown, so finding the
missing names of a batch takes about a call each. A crawl counts, per page, the run of its
links in a row that turned out missing; once a run reaches MISSING_RUN, the rest of that
page's links are skipped (state `skipped`, reported with the way to follow them). A link
that turns out real ends the run, so a page whose broken links are scattered among real ones
is followed to the end: what it costs is then bounded by the real pages it yields.
"""

from __future__ import annotations

# Links of one page in a row found missing before its other links are skipped: two full
# batches of nothing, well past chance on a page whose links are mostly real.
MISSING_RUN = 40


class BrokenLinks:
    """Per page (the name its links were found on), the run of links in a row found missing."""

    def __init__(self, run: int = MISSING_RUN) -> None:
        self.run = run
        self._runs: dict[str, int] = {}
        self.broken: set[str] = set()

    def note(self, source: str, missing: bool) -> None:
        """One link found on `source` settled: missing upstream, or there."""
        if source in self.broken:
            return
        count = self._runs.get(source, 0) + 1 if missing else 0
        self._runs[source] = count
        if count >= self.run:
            self.broken.add(source)
            del self._runs[source]

    def skips(self, source: str) -> bool:
        """True if the links found on `source` are no longer followed."""
        return source in self.broken
