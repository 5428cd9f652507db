"""The crawl's walk: batches of 20 in flight at once, each committed as it arrives.

Breadth-first and level by level: every queued name at one depth is settled before any
deeper one is asked for, so a page is always reached at its smallest depth and `--depth`
means exactly that. Worker threads fetch, read links and commit; the calling thread hands
out batches and reports progress (so Ctrl-C, which Python delivers to it, stops cleanly).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import limits
from .. import names as naming
from ..crawl.frontier import Limits, State, children
from ..crawl.links import linked_names
from ..crawl.scope import Scope
from ..errors import AuthError, PermissionDenied, UpstreamError
from ..models import Document, content_sha256
from ..policy import Action, Mode, plan
from .context import Context

if TYPE_CHECKING:
    from ..store.crawls import BatchChanges, Claim
    from ..store.store import Store
    from ..upstream import Upstream
    from .crawl import CrawlOptions, CrawlReport

# The walk stops after this many batches in a row failed (after their retries): upstream is
# down rather than flaky (the same rule as `fetch`).
STOP_AFTER = 3
# How often the progress callback runs while batches are in flight (seconds).
TICK = 0.5
# Queued names read from the store at once, per batch slot.
PREFETCH = 5
# A pass over a level that settled nothing found every name claimed by another crawler on
# the same frontier (PostgreSQL): wait this long (seconds) before looking again.
CLAIMED_ELSEWHERE_WAIT = 0.2


@dataclass(frozen=True, slots=True)
class CrawlProgress:
    """A crawl's progress, as a progress display shows it."""

    done: int
    known: int
    fetched: int
    retries: int
    quota_wait: float
    in_flight: int


@dataclass(frozen=True, slots=True)
class Settled:
    """One batch's result, for the counters: how many names in each state, new names known."""

    states: dict[str, str]
    added: int
    error: UpstreamError | None = None


class Walk:
    """One run over a crawl's frontier; `fill` writes its outcome into a CrawlReport."""

    def __init__(
        self,
        ctx: Context,
        store: Store,
        upstream: Upstream,
        crawl_id: int,
        scope: Scope,
        limits: Limits,
        options: CrawlOptions,
    ) -> None:
        self.ctx = ctx
        self.store = store
        self.crawls = store.crawls
        self.upstream = upstream
        self.crawl_id = crawl_id
        self.scope = scope
        self.limits = limits
        self.options = options
        self.label = upstream.label
        self._stop = threading.Event()
        # One committing worker at a time: threads then queue in order on this lock rather
        # than polling SQLite's busy handler, which can starve one past its timeout.
        self._commit = threading.Lock()
        self._stats_start = upstream.stats
        self.counts = self.crawls.counts(crawl_id)
        self.error: UpstreamError | None = None
        self.stopped: str | None = None
        self._in_a_row = 0

    # -- the calling thread ------------------------------------------------------------------

    def run(self, progress: Callable[[CrawlProgress], None] | None) -> None:
        """Walk the frontier level by level until nothing is queued (or the walk stops)."""
        retried: set[int] = set()
        with ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="crawl") as pool:
            try:
                while self.stopped is None:
                    depth = self.crawls.pending_depth(self.crawl_id)
                    if depth is None:
                        break
                    if self._level(pool, depth, progress) == 0 and self.stopped is None:
                        time.sleep(CLAIMED_ELSEWHERE_WAIT)
                    # A flaky stretch has often passed by the end of a level: one more try
                    # for its failed names before going deeper (their links are wanted).
                    if self.stopped is None and depth not in retried:
                        retried.add(depth)
                        requeued = self.crawls.requeue_failed(self.crawl_id, depth)
                        self._move(State.FAILED, State.QUEUED, requeued)
            except KeyboardInterrupt:
                self._stop.set()  # batches in flight commit; queued ones are not started
                raise
        if progress:
            progress(self.progress(0))

    def _level(
        self, pool: ThreadPoolExecutor, depth: int, progress: Callable[[CrawlProgress], None] | None
    ) -> int:
        """Settle every queued name at `depth`, `concurrency` batches in flight at once;
        returns how many names this pass settled (the others another crawler holds)."""
        slots = self.options.concurrency
        settled = 0
        after = -1
        ready: deque[str] = deque()
        exhausted = False
        in_flight: dict[Future[Settled], list[str]] = {}
        last_tick = 0.0
        while True:
            while self.stopped is None and len(in_flight) < slots and not (exhausted and not ready):
                if len(ready) < limits.MAX_NAMES and not exhausted:
                    rows = self.crawls.queued(
                        self.crawl_id, depth, after, limits.MAX_NAMES * slots * PREFETCH
                    )
                    exhausted = len(rows) < limits.MAX_NAMES * slots * PREFETCH
                    if rows:
                        after = rows[-1][0]
                        ready.extend(name for _, name in rows)
                    continue
                batch = [ready.popleft() for _ in range(min(limits.MAX_NAMES, len(ready)))]
                in_flight[pool.submit(self._batch, batch, depth)] = batch
            if not in_flight:
                return settled
            done, _ = wait(in_flight, timeout=TICK, return_when=FIRST_COMPLETED)
            for future in done:
                in_flight.pop(future)
                result = future.result()
                settled += len(result.states)
                self._settle(result)
            now = time.monotonic()
            if progress and (done or now - last_tick >= TICK):
                last_tick = now
                progress(self.progress(len(in_flight)))

    def _settle(self, settled: Settled) -> None:
        for state in settled.states.values():
            self.counts[State.QUEUED] = self.counts.get(State.QUEUED, 0) - 1
            self.counts[state] = self.counts.get(state, 0) + 1
        self.counts[State.QUEUED] = self.counts.get(State.QUEUED, 0) + settled.added
        error = settled.error
        if error is None:
            self._in_a_row = 0
            return
        self.error = error
        if isinstance(error, (AuthError, PermissionDenied)):
            self.stopped = "upstream refused the key or the API"
            return
        self._in_a_row += 1
        if self._in_a_row >= STOP_AFTER:
            self.stopped = f"{self._in_a_row} batches in a row failed"

    def _move(self, source: str, target: str, count: int) -> None:
        self.counts[source] = self.counts.get(source, 0) - count
        self.counts[target] = self.counts.get(target, 0) + count

    def progress(self, in_flight: int) -> CrawlProgress:
        """The progress now."""
        stats = self.upstream.stats
        known = sum(self.counts.values())
        return CrawlProgress(
            done=known - self.counts.get(State.QUEUED, 0),
            known=known,
            fetched=self.counts.get(State.FETCHED, 0),
            retries=stats.retries - self._stats_start.retries,
            quota_wait=stats.quota_wait_seconds - self._stats_start.quota_wait_seconds,
            in_flight=in_flight,
        )

    def fill(self, report: CrawlReport) -> None:
        """Write the crawl's counts (from the store) and this run's upstream stats into `report`."""
        counts = self.crawls.counts(self.crawl_id)
        report.known = sum(counts.values())
        report.fetched = counts.get(State.FETCHED, 0)
        report.had = counts.get(State.HAD, 0)
        report.unchanged = counts.get(State.UNCHANGED, 0)
        report.queued = counts.get(State.QUEUED, 0)
        report.missing = self.crawls.names_in(self.crawl_id, [State.MISSING])
        report.failed = self.crawls.names_in(self.crawl_id, [State.FAILED])
        stats = self.upstream.stats
        report.requests = stats.calls - self._stats_start.calls
        report.retries = stats.retries - self._stats_start.retries
        report.quota_wait = stats.quota_wait_seconds - self._stats_start.quota_wait_seconds
        report.error = self.error if report.failed or self.stopped else None
        report.stopped = self.stopped

    # -- worker threads ----------------------------------------------------------------------

    def _batch(self, names: list[str], depth: int) -> Settled:
        """Settle one batch: what the store has, what upstream lacks, fetch the rest, read
        links, and commit it all in one transaction."""

        if self._stop.is_set():
            return Settled({}, 0)  # stays queued for the next run
        # Names another crawler holds (or settled since they were read) are left to it.
        with self.crawls.claim(self.crawl_id, names) as claim:
            if not claim.names:
                return Settled({}, 0)
            return self._settle_claimed(claim, depth)

    def _settle_claimed(self, claim: Claim, depth: int) -> Settled:
        from ..store.crawls import BatchChanges
        from ..upstream.batching import BatchOutcome, fetch_batch

        names = claim.names
        now = self.ctx.clock()
        cached = self.store.get_many(names)
        # A crawl always goes online for what is not fresh, whatever the offline flag says.
        mode = Mode(max_age=self.options.mode.max_age, refresh=self.options.mode.refresh)
        decided = plan(names, cached, mode, now=now)
        to_fetch = decided.to_fetch
        changes = BatchChanges(child_depth=depth + 1)
        for name in decided.names(Action.SERVE_CACHED):
            changes.states[name] = State.HAD
            self._add_links(changes, cached[name].document)
        if to_fetch and not self.options.retry_missing:
            age = self.options.missing_max_age
            known = self.crawls.known_missing(
                to_fetch, checked_since=None if age is None else now - age
            )
            for name in known:
                changes.states[name] = State.MISSING
            to_fetch = [n for n in to_fetch if n not in known]
        error: UpstreamError | None = None
        outcome = BatchOutcome()
        if to_fetch:
            try:
                outcome = fetch_batch(self.upstream, to_fetch)
            except UpstreamError as exc:
                error = exc
                changes.states.update((n, State.FAILED) for n in to_fetch)
        for doc in outcome.documents:
            doc = doc.with_derived_fields()
            before = cached.get(doc.name)
            same = before is not None and before.sha256 == content_sha256(doc.content or "")
            changes.states[doc.name] = State.UNCHANGED if same else State.FETCHED
            changes.documents.append(doc)
            changes.found.append(doc.name)
            self._add_links(changes, doc)
        for name in outcome.missing:
            changes.states[name] = State.MISSING
            changes.missing.append(name)
        with self._commit:
            added = self.crawls.commit(
                self.crawl_id,
                changes,
                fetched_at=self.ctx.clock(),
                upstream=self.label,
                max_docs=self.limits.max_docs,
                claim=claim,
            )
        return Settled(dict(changes.states), added, error)

    def _add_links(self, changes: BatchChanges, doc: Document) -> None:
        if not doc.content or not self.limits.follows_links_from(changes.child_depth - 1):
            return
        base = doc.uri or naming.uri_of(doc.name)
        linked = linked_names(doc.content, base)
        found = children(linked, changes.child_depth - 1, self.scope, self.limits, exclude=doc.name)
        changes.children.extend((name, doc.name) for name in found)
