"""Refresh: bring stored documents up to date for the price of their metadata.

Two phases. First every stored copy in scope is compared with upstream's BASIC view (20 names
per call, no content): an unchanged copy is marked checked now, without rewriting it; a name
upstream lacks is flagged gone and kept. Then only the changed documents are fetched in full
(20 per call) and written through the store, which records their new versions. Batches run
`concurrency` at a time (the upstream client's pacer is thread-safe); every write happens on
the calling thread as each batch arrives, so Ctrl-C keeps everything finished.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import limits
from ..errors import AuthError, PermissionDenied, UpstreamError
from ..models import Document, Stamp, View, content_sha256
from ..policy import refetch_needed
from .context import Context
from .parallel import in_parallel

if TYPE_CHECKING:
    from ..upstream import Upstream
    from ..upstream.batching import BatchOutcome

log = logging.getLogger("mirror")

# Batches in flight at once: 4 x 20 names keeps a 100/min quota busy without bursting past it.
DEFAULT_CONCURRENCY = 4

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class RefreshReport:
    """What a refresh did, for the summary line and `refresh --json`."""

    selected: int = 0  # stored copies in scope (and old enough)
    checked: int = 0  # of those, how many upstream answered about
    unchanged: int = 0
    changed: list[str] = field(default_factory=list)  # refetched: a new updateTime or length
    gone: list[str] = field(default_factory=list)  # upstream no longer has them (kept, flagged)
    failed: list[str] = field(default_factory=list)  # not checked or not refetched; rerun
    new_versions: int = 0  # changed documents whose content really changed
    error: UpstreamError | None = None
    stopped: str | None = None
    interrupted: bool = False

    @property
    def not_refreshed(self) -> int:
        """Copies in scope this run did not bring up to date: failed, and (when it stopped
        early, on a rejected key) never asked."""
        return self.selected - self.unchanged - len(self.changed) - len(self.gone)

    def to_json(self) -> dict[str, Any]:
        """As `refresh --json` prints it (stable key order)."""
        return {
            "selected": self.selected,
            "checked": self.checked,
            "unchanged": self.unchanged,
            "changed": list(self.changed),
            "newVersions": self.new_versions,
            "gone": list(self.gone),
            "failed": list(self.failed),
            "error": self.error.message if self.error else None,
            "hint": self.error.hint if self.error else None,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
            "notRefreshed": self.not_refreshed,
        }


class RefreshInterrupted(KeyboardInterrupt):
    """Ctrl-C during `refresh`, after every finished batch was saved; `.report` says how far."""

    def __init__(self, report: RefreshReport) -> None:
        super().__init__(f"refresh interrupted after checking {report.checked} document(s)")
        self.report = report


def refresh(
    ctx: Context,
    *,
    older_than: float | None = None,
    prefix: str | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    progress: Progress | None = None,
) -> RefreshReport:
    """Compare stored copies (under `prefix`, last checked more than `older_than` seconds ago)
    with upstream's metadata and refetch only what changed."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, not {concurrency}")
    cutoff = ctx.clock() - older_than if older_than is not None else None
    stamps = {s.name: s for s in ctx.store.refresh_stamps(prefix, cutoff)}
    report = RefreshReport(selected=len(stamps))
    if not stamps:
        return report
    run = _Run(ctx, report, stamps, concurrency, progress)  # goes online (or refuses) here
    try:
        run.pass_over(sorted(stamps), View.BASIC, run.compared)
        if run.to_fetch and report.stopped is None:
            run.pass_over(sorted(run.to_fetch), View.CONTENT, run.fetched)
    except KeyboardInterrupt:
        report.interrupted = True
        raise RefreshInterrupted(report) from None
    finally:
        # Retention also bounds documents whose history grew before it was lowered.
        ctx.store.prune_versions(ctx.settings.keep_versions, sorted(stamps))
    return report


class _Run:
    """One refresh: sends batches, saves each result on the calling thread, keeps the report."""

    def __init__(
        self,
        ctx: Context,
        report: RefreshReport,
        stamps: dict[str, Stamp],
        concurrency: int,
        progress: Progress | None,
    ) -> None:
        self.ctx = ctx
        self.report = report
        self.stamps = stamps
        self.concurrency = concurrency
        self.progress = progress
        self.upstream: Upstream = ctx.upstream()
        self.to_fetch: list[str] = []
        self.done = 0
        self.total = len(stamps)

    def pass_over(self, names: list[str], view: View, save: Callable[[BatchOutcome], None]) -> None:
        """Send `names` in batches of 20 with `view`, saving each outcome as it arrives."""
        from ..upstream.batching import fetch_batch

        step = limits.MAX_NAMES
        batches = [names[i : i + step] for i in range(0, len(names), step)]

        def call(batch: list[str]) -> BatchOutcome:
            return fetch_batch(self.upstream, batch, view)

        for batch, outcome in in_parallel(batches, call, self.concurrency, "dk-refresh"):
            if isinstance(outcome, BaseException):
                if not self._failed(batch, outcome):
                    return
                continue
            save(outcome)

    def _failed(self, batch: list[str], exc: BaseException) -> bool:
        """Note a failed batch; False when the run must stop (every batch would fail)."""
        report = self.report
        if not isinstance(exc, UpstreamError):
            raise exc
        report.error = exc
        report.failed.extend(batch)
        if isinstance(exc, AuthError | PermissionDenied):
            report.stopped = "upstream refused the key or the API"
            return False
        log.warning("refresh: a batch of %d failed: %s", len(batch), exc.message)
        return True

    def compared(self, outcome: BatchOutcome) -> None:
        """Phase 1: sort one BASIC batch into unchanged (marked checked), changed and gone."""
        report, store, now = self.report, self.ctx.store, self.ctx.clock()
        unchanged: list[str] = []
        for doc in outcome.documents:
            stamp = self.stamps[doc.name]
            if refetch_needed(
                stamp.update_time,
                stamp.content_length_bytes,
                doc.update_time,
                doc.content_length_bytes,
            ):
                self.to_fetch.append(doc.name)
            else:
                unchanged.append(doc.name)
        if unchanged:
            store.mark_checked(unchanged, now)
        self._gone(outcome.missing, now)
        report.checked += len(outcome.documents) + len(outcome.missing)
        report.unchanged += len(unchanged)
        self._advance(len(unchanged) + len(outcome.missing))

    def fetched(self, outcome: BatchOutcome) -> None:
        """Phase 2: write one batch of changed documents (the store records their versions)."""
        store, now = self.ctx.store, self.ctx.clock()
        docs = [doc.with_derived_fields() for doc in outcome.documents]
        if docs:
            changed_content = _content_changes(self.ctx, docs)
            store.put(docs, fetched_at=now, upstream=self.upstream.label)
            store.clear_gone([d.name for d in docs])
            self.report.changed.extend(d.name for d in docs)
            self.report.new_versions += changed_content
        self._gone(outcome.missing, now)
        self._advance(len(docs) + len(outcome.missing))

    def _gone(self, names: Sequence[str], now: float) -> None:
        if names:
            self.ctx.store.mark_gone(names, now)
            self.report.gone.extend(names)

    def _advance(self, count: int) -> None:
        self.done += count
        if self.progress:
            self.progress(self.done, self.total)


def _content_changes(ctx: Context, docs: Sequence[Document]) -> int:
    """How many of `docs` differ in content from the stored copies (a new version each)."""
    stored = ctx.store.get_many([d.name for d in docs])
    return sum(
        1
        for d in docs
        if d.content is not None
        and (d.name not in stored or stored[d.name].sha256 != content_sha256(d.content))
    )
