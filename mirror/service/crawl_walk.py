"""The crawl's walk: batches of 20 in flight at once, each committed as it arrives.

Breadth-first and level by level: every queued name at one depth is settled before any
deeper one is asked for, so a page is always reached at its smallest depth and `--depth`
means exactly that.

The calling thread hands out batches and reports progress (so Ctrl-C, which Python delivers
to it, stops cleanly); fetch workers ask upstream and read links. How a batch commits depends
on who may share the frontier:
- SQLite (one process writes at a time): one writer thread commits what the workers hand it,
  every batch that arrived while it was busy in one transaction (group commit: a commit's
  fixed costs are paid once per group, and fetching never waits for the store).
- PostgreSQL (several crawlers may share a frontier): each worker claims its batch's rows
  (FOR UPDATE SKIP LOCKED) and commits the batch in that same transaction, so no other
  crawler fetches them and a crawler that dies leaves them queued. PostgreSQL commits
  concurrent transactions side by side, so the workers need no writer between them.
Either way at most `concurrency` batches are handed out and not yet committed at any moment,
so a kill loses at most one batch per worker.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import interrupts, limits
from .. import names as naming
from ..crawl.broken import BrokenLinks
from ..crawl.frontier import Limits, State, children
from ..crawl.links import linked_names
from ..crawl.scope import Scope
from ..errors import AuthError, PermissionDenied, UpstreamError
from ..interrupts import Stopping
from ..models import Document, content_sha256
from ..policy import Action, Mode, plan
from ..upstream.factory import quota_rule
from .context import Context
from .crawl_reports import CrawlProgress

if TYPE_CHECKING:
    from ..store.store import Store
    from ..store.tables.crawls import BatchChanges, GroupWriter
    from ..upstream import Upstream
    from .crawl_reports import CrawlOptions, CrawlReport

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
# The states a report counts for this run alone, beside the crawl's totals.
THIS_RUN = (State.FETCHED, State.HAD, State.UNCHANGED, State.MISSING, State.FAILED)
# Documents one group commit may hold: enough to pay a transaction's fixed costs once per
# several batches, small enough that the write lock is never held for long.
GROUP_DOCUMENTS = 200


@dataclass(frozen=True, slots=True)
class Fetched:
    """One batch as a fetch worker hands it to the writer."""

    changes: BatchChanges | None  # None: not started (the walk is stopping); stays queued
    error: UpstreamError | None = None  # the batch failed upstream (its names: FAILED)
    crashed: BaseException | None = None  # the worker itself failed: the walk stops


@dataclass(slots=True)
class Settled:
    """Committed batches, for the counters: how many, each name's state, new names known,
    and the upstream error each batch met (None: it did not fail), in order."""

    batches: int = 0
    states: dict[str, str] = field(default_factory=dict)
    added: int = 0
    errors: list[UpstreamError | None] = field(default_factory=list)
    crashed: BaseException | None = None  # a worker or the writer failed: the walk stops


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
        # Batches handed out and not yet committed: at most `concurrency` of them.
        # Fetch workers -> writer (SQLite): fetched batches; None ends the writer.
        self._fetched: queue.SimpleQueue[Fetched | None] = queue.SimpleQueue()
        # Writer or PostgreSQL workers -> calling thread: committed batches.
        self._settled: queue.SimpleQueue[Settled] = queue.SimpleQueue()
        self._grouped = not self.crawls.claims_rows
        self._written = False  # the writer has taken the end marker
        self._stats_start = upstream.stats
        # Seconds between two paced Get calls at the full rate (the ETA's floor).
        self._interval = quota_rule(ctx.settings, "get").interval
        self.counts = self.crawls.counts(crawl_id)
        self.error: UpstreamError | None = None
        self.stopped: str | None = None
        self._in_a_row = 0
        # Names read from the frontier and not settled yet: (seq, the page they were found on).
        self._found_on: dict[str, tuple[int, str]] = {}
        # Names this run settled, by state: other crawlers on a shared frontier (PostgreSQL)
        # settle the rest of the crawl's counts.
        self.mine: Counter[str] = Counter()
        # Runs of missing links per page, unless told to follow every link.
        self._broken = None if options.follow_broken_links else BrokenLinks()

    # -- the calling thread ------------------------------------------------------------------

    def run(self, progress: Callable[[CrawlProgress], None] | None) -> None:
        """Walk the frontier level by level until nothing is queued (or the walk stops)."""
        writer = None
        self._written = False  # a walk may run again (after a section search)
        if self._grouped:
            writer = threading.Thread(target=self._write_loop, name="crawl-writer", daemon=True)
            writer.start()
        pool = ThreadPoolExecutor(self.options.concurrency, thread_name_prefix="crawl")
        try:
            self._walk(pool, progress)
        except BaseException:
            # Ctrl-C (or a crash): no batch starts any more, and those still being fetched
            # are not waited for (a fetch can sit a minute in the quota's queue); their names
            # stay queued in the frontier, so the next run asks for them again.
            self._stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        else:
            pool.shutdown(wait=True)
        finally:
            if writer is not None:
                # After a walk that ran out, every batch started was handed to the writer
                # before the end marker: it commits them all, then ends. After Ctrl-C, it
                # commits those already handed over (a write of moments) and drops the rest.
                self._fetched.put(None)
                interrupts.join(writer)  # Ctrl-C heard meanwhile
        if progress:
            progress(self.progress(0))

    def _walk(
        self, pool: ThreadPoolExecutor, progress: Callable[[CrawlProgress], None] | None
    ) -> None:
        retried: set[int] = set()
        while self.stopped is None:
            depth = self.crawls.pending_depth(self.crawl_id)
            if depth is None:
                break
            if self._level(pool, depth, progress) == 0 and self.stopped is None:
                time.sleep(CLAIMED_ELSEWHERE_WAIT)
            # A flaky stretch has often passed by the end of a level: one more try for its
            # failed names before going deeper (their links are wanted).
            if self.stopped is None and depth not in retried:
                retried.add(depth)
                requeued = self.crawls.requeue_failed(self.crawl_id, depth)
                self._move(State.FAILED, State.QUEUED, requeued)

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
        in_flight = 0  # handed out and not yet committed
        last_tick = 0.0
        while True:
            while self.stopped is None and in_flight < slots and not (exhausted and not ready):
                if len(ready) < limits.MAX_NAMES and not exhausted:
                    rows = self.crawls.queued(
                        self.crawl_id, depth, after, limits.MAX_NAMES * slots * PREFETCH
                    )
                    exhausted = len(rows) < limits.MAX_NAMES * slots * PREFETCH
                    if rows:
                        after = rows[-1][0]
                        ready.extend(name for _, name, _ in rows)
                        self._found_on.update((name, (seq, src)) for seq, name, src in rows)
                    continue
                batch = self._take(ready)
                if batch:
                    pool.submit(self._batch, batch, depth)
                    in_flight += 1
            if not in_flight:
                return settled
            try:
                done: Settled | None = self._settled.get(timeout=TICK)
            except queue.Empty:
                done = None
            while done is not None:
                in_flight -= done.batches
                settled += len(done.states)
                self._settle(done)
                try:
                    done = self._settled.get_nowait()
                except queue.Empty:
                    break
            now = time.monotonic()
            if progress and now - last_tick >= TICK / 5:
                last_tick = now
                progress(self.progress(in_flight))

    def _take(self, ready: deque[str]) -> list[str]:
        """The next batch from `ready`; names found on a page whose links kept turning out
        missing are marked skipped instead (crawl/broken.py)."""
        batch: list[str] = []
        dropped: list[str] = []
        while ready and len(batch) < limits.MAX_NAMES:
            name = ready.popleft()
            source = self._found_on.get(name, (0, ""))[1]
            if self._broken is not None and self._broken.skips(source):
                dropped.append(name)
                self._found_on.pop(name, None)
            else:
                batch.append(name)
        if dropped:
            self._move(State.QUEUED, State.SKIPPED, self.crawls.skip(self.crawl_id, dropped))
        return batch

    def _note_links(self, states: dict[str, str]) -> None:
        """Count each settled name, in frontier order, in its page's run of missing links."""
        in_order = sorted(states, key=lambda n: self._found_on.get(n, (0, ""))[0])
        for name in in_order:
            _seq, source = self._found_on.pop(name, (0, ""))
            state = states[name]
            # Only links of pages (seeds and search results are the user's own choice), and
            # only answers: a failed batch says nothing about its names.
            if self._broken and source.startswith("documents/") and state != State.FAILED:
                self._broken.note(source, state == State.MISSING)

    def _settle(self, settled: Settled) -> None:
        if settled.crashed is not None:
            raise settled.crashed
        self._note_links(settled.states)
        self.mine.update(settled.states.values())
        for state in settled.states.values():
            self.counts[State.QUEUED] = self.counts.get(State.QUEUED, 0) - 1
            self.counts[state] = self.counts.get(state, 0) + 1
        self.counts[State.QUEUED] = self.counts.get(State.QUEUED, 0) + settled.added
        for error in settled.errors:
            self._count(error)

    def _count(self, error: UpstreamError | None) -> None:
        """Note one batch's outcome: batches failing in a row stop the walk."""
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
        queued = self.counts.get(State.QUEUED, 0)
        return CrawlProgress(
            done=known - queued,
            known=known,
            fetched=self.counts.get(State.FETCHED, 0),
            retries=stats.retries - self._stats_start.retries,
            quota_wait=stats.quota_wait_wall_seconds - self._stats_start.quota_wait_wall_seconds,
            in_flight=in_flight,
            paced_left=math.ceil(queued / limits.MAX_NAMES) * self._interval,
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
        report.this_run = {state: self.mine.get(state, 0) for state in THIS_RUN}
        report.skipped = counts.get(State.SKIPPED, 0)
        report.skipped_from = self.crawls.skipped_from(self.crawl_id) if report.skipped else []
        stats = self.upstream.stats
        report.requests = stats.calls - self._stats_start.calls
        report.retries = stats.retries - self._stats_start.retries
        report.quota_wait = (
            stats.quota_wait_wall_seconds - self._stats_start.quota_wait_wall_seconds
        )
        report.not_found_calls = stats.not_found - self._stats_start.not_found
        report.error = self.error if report.failed or self.stopped else None
        report.stopped = self.stopped

    # -- fetch workers -----------------------------------------------------------------------

    def _batch(self, names: list[str], depth: int) -> None:
        """One batch, whatever happens: on SQLite fetched and handed to the writer; on
        PostgreSQL claimed, fetched and committed here, then reported as settled."""
        if self._grouped:
            fetched = Fetched(None)
            try:
                if not self._stop.is_set():  # else it stays queued for the next run
                    fetched = Fetched(*self._prepare(names, depth))
            except Stopping:
                pass  # Ctrl-C cut a wait short: not fetched, it stays queued
            except BaseException as exc:
                fetched = Fetched(None, crashed=exc)
            finally:
                self._fetched.put(fetched)
            return
        settled = Settled(batches=1)
        try:
            if not self._stop.is_set():
                self._claim_and_commit(names, depth, settled)
        except Stopping:
            pass  # the claim's transaction rolled back: still queued
        except BaseException as exc:
            settled.crashed = exc  # the claim's transaction rolled back: still queued
        finally:
            self._settled.put(settled)

    def _claim_and_commit(self, names: list[str], depth: int, settled: Settled) -> None:
        """Claim the batch's rows, fetch, and commit in the claim's transaction (PostgreSQL).
        Names another crawler holds (or settled since they were read) are left to it."""
        with self.crawls.claim(self.crawl_id, names) as claim:
            if not claim.names:
                return
            changes, error = self._prepare(claim.names, depth)
            settled.added = self.crawls.commit(
                self.crawl_id,
                [changes],
                fetched_at=self.ctx.clock(),
                upstream=self.label,
                max_docs=self.limits.max_docs,
                claim=claim,
            )
        settled.states, settled.errors = dict(changes.states), [error]

    def _prepare(self, names: list[str], depth: int) -> tuple[BatchChanges, UpstreamError | None]:
        """Settle one batch but for its commit: what the store has, what upstream lacks,
        fetch the rest, read links."""
        from ..store.tables.crawls import BatchChanges
        from ..upstream.batching import BatchOutcome, fetch_batch

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
        return changes, error

    def _add_links(self, changes: BatchChanges, doc: Document) -> None:
        if not doc.content or not self.limits.follows_links_from(changes.child_depth - 1):
            return
        base = doc.uri or naming.uri_of(doc.name)
        linked = linked_names(doc.content, base)
        found = children(linked, changes.child_depth - 1, self.scope, self.limits, exclude=doc.name)
        changes.children.extend((name, doc.name) for name in found)

    # -- the writer (SQLite) -----------------------------------------------------------------

    def _write_loop(self) -> None:
        """Commit what the fetch workers hand over, every batch waiting at once in one
        transaction, until the end marker; after a failed commit, commit nothing more."""
        try:
            with self.crawls.writer() as writer:
                self._write_on(writer, None)
        except BaseException as exc:  # no connection: every batch is reported, none written
            if not self._written:
                self._write_on(None, exc)

    def _write_on(self, writer: GroupWriter | None, crashed: BaseException | None) -> None:
        ended = False
        while not ended:
            group = [self._fetched.get()]
            documents = _documents(group[0])
            while documents < GROUP_DOCUMENTS:
                try:
                    item = self._fetched.get_nowait()
                except queue.Empty:
                    break
                group.append(item)
                documents += _documents(item)
            ended = self._written = None in group
            batches = [item for item in group if item is not None]
            if not batches:
                continue
            settled = Settled(batches=len(batches))
            try:
                if crashed is None and writer is not None:
                    self._commit(writer, batches, settled)
            except BaseException as exc:
                crashed = exc  # what was not committed stays queued for the next run
            settled.crashed = crashed
            self._settled.put(settled)

    def _commit(self, writer: GroupWriter, batches: list[Fetched], settled: Settled) -> None:
        """Commit the group's batches in one transaction; then raise what a worker met."""
        group = [item.changes for item in batches if item.changes is not None]
        if group:
            settled.added = writer.commit(
                self.crawl_id,
                group,
                fetched_at=self.ctx.clock(),
                upstream=self.label,
                max_docs=self.limits.max_docs,
            )
        for changes in group:
            settled.states.update(changes.states)
        settled.errors = [item.error for item in batches if item.changes is not None]
        for item in batches:
            if item.crashed is not None:
                raise item.crashed


def _documents(item: Fetched | None) -> int:
    return len(item.changes.documents) if item is not None and item.changes is not None else 0
