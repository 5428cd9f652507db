"""Documents use cases: get (cache first, plan-driven), fetch any number, import, list, suggest."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import limits
from .. import names as naming
from ..errors import AuthError, NotCached, NotFound, NotThen, PermissionDenied, UpstreamError
from ..models import CachedDocument, Document, Source, Summary, rfc3339
from ..policy import Action, Mode, OnFailure, on_failure, plan
from .context import Context
from .parallel import in_parallel

if TYPE_CHECKING:
    from ..upstream.batching import BatchOutcome

# Suggestions rank at most this many names per listing prefix: a miss must stay cheap.
SUGGEST_POOL = 2000


Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Served:
    """Where one returned document came from."""

    name: str
    source: Source
    fetched_at: float
    upstream: str
    update_time: str | None = None  # the document's own updateTime, as this copy has it

    def to_json(self) -> dict[str, Any]:
        """As `get --json` reports it under `_mirror.served` (and MCP under `_meta`)."""
        return {
            "name": self.name,
            "source": str(self.source),
            "fetchedAt": rfc3339(self.fetched_at),
            "updateTime": self.update_time,
        }


@dataclass(frozen=True, slots=True)
class GetResult:
    """Documents in request order, with where each came from and any warnings.

    Only a partial get (`partial=True`) returns with names `missing`; `error` is then the
    NotCached or NotFound a whole get would have raised, for the caller to raise after output.
    """

    documents: list[Document]
    served: list[Served]
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    error: NotCached | NotFound | None = None
    as_of: float | None = None  # an as-of read: the instant the documents are as of

    def to_api(self) -> dict[str, Any]:
        """The BatchGetDocumentsResponse JSON upstream would have returned."""
        return {"documents": [doc.to_api() for doc in self.documents]}

    def to_json(self) -> dict[str, Any]:
        """`get --json`: the batchGet JSON, plus where each came from and what is missing."""
        return {
            **self.to_api(),
            "_mirror": {
                "served": [s.to_json() for s in self.served],
                "missing": self.missing,
                "asOf": rfc3339(self.as_of),
            },
        }


# `fetch` stops after this many batches in a row failed (after their retries): upstream is
# down rather than flaky, and trying every other batch would only take deadline after deadline.
FETCH_STOP_AFTER = 3
# Batches a fetch has in flight at once: as refresh, 4 x 20 names keeps a 100/min quota busy
# without bursting past it (the pacer spaces the calls in any case).
FETCH_CONCURRENCY = 4


@dataclass(slots=True)
class FetchReport:
    """What a `fetch` did, for the summary line and `fetch --json`."""

    requested: int = 0
    already_cached: int = 0
    fetched: int = 0
    missing: list[str] = field(default_factory=list)
    # Names not stored because their batch still failed after retries (or the run stopped
    # before trying it); the next run fetches exactly these again.
    failed: list[str] = field(default_factory=list)
    error: UpstreamError | None = None  # the last failure
    stopped: str | None = None  # why the run stopped before trying every batch, if it did
    interrupted: bool = False  # Ctrl-C: what was done is saved, the rest is neither

    def to_json(self) -> dict[str, Any]:
        """The report as `fetch --json` prints it (stable key order)."""
        return {
            "requested": self.requested,
            "alreadyCached": self.already_cached,
            "fetched": self.fetched,
            "missing": list(self.missing),
            "failed": list(self.failed),
            "error": self.error.message if self.error else None,
            "hint": self.error.hint if self.error else None,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
        }


class FetchInterrupted(KeyboardInterrupt):
    """Ctrl-C during `fetch`, after every finished batch was committed; `.report` says how far."""

    def __init__(self, report: FetchReport) -> None:
        super().__init__(f"fetch interrupted after saving {report.fetched} document(s)")
        self.report = report


def get_documents(
    ctx: Context, names: Sequence[str], mode: Mode, *, partial: bool = False
) -> GetResult:
    """Up to 20 documents in request order: fresh copies from the store, the rest fetched.

    A name not cached (offline) or not found upstream raises NotCached / NotFound; with
    `partial`, the others are returned and the missing names and that error are reported.
    """
    limits.check_names(names)
    if ctx.as_of is not None:
        mode = Mode(offline=True)  # the past is never fetched, and never "stale"
    wanted = naming.normalize_all(names)
    cached = ctx.store.get_many(wanted)
    decided = plan(wanted, cached, mode, now=ctx.clock())
    sources = {n: Source.CACHE for n in decided.names(Action.SERVE_CACHED)}
    warnings: list[str] = []
    error: NotCached | NotFound | None = None
    absent = decided.names(Action.NOT_CACHED)
    if absent:
        error = NotCached(absent) if ctx.as_of is None else _not_then(ctx, ctx.as_of, absent)
        if not partial:
            raise error
    stale = decided.names(Action.SERVE_STALE)
    if stale:
        sources.update((n, Source.STALE) for n in stale)
        warnings.append(f"offline: served {len(stale)} copy(ies) older than --max-age")
    if decided.to_fetch:
        cached, fetched_sources, notes, not_found = _fetch_for_get(ctx, decided.to_fetch, cached)
        sources.update(fetched_sources)
        warnings.extend(notes)
        if not_found is not None:
            error = not_found
            if not partial:
                raise error
    missing = set(error.names) if error is not None else set()
    kept = [n for n in wanted if n not in missing]
    return GetResult(
        documents=[cached[n].document for n in kept],
        served=[_served(cached[n], sources[n]) for n in kept],
        warnings=warnings,
        missing=error.names if error is not None else [],
        error=error,
        as_of=ctx.as_of,
    )


def provenance(ctx: Context, names: Sequence[str]) -> list[Served]:
    """Each held copy of `names` (in order, once each): its fetch time, origin, updateTime."""
    wanted = list(dict.fromkeys(names))
    held = ctx.store.get_many(wanted) if wanted else {}
    return [_served(held[n], Source.CACHE) for n in wanted if n in held]


def _served(copy: CachedDocument, source: Source) -> Served:
    return Served(copy.name, source, copy.fetched_at, copy.upstream, copy.document.update_time)


def _not_then(ctx: Context, at: float, absent: list[str]) -> NotThen:
    """The error for names an as-of read lacks: not yet fetched then, or pruned since."""
    pruned = ctx.store.as_of(at, names=absent).pruned
    return NotThen(absent, pruned=pruned, when=rfc3339(at) or "")


def _fetch_for_get(
    ctx: Context, to_fetch: list[str], cached: dict[str, CachedDocument]
) -> tuple[dict[str, CachedDocument], dict[str, Source], list[str], NotFound | None]:
    """Fetch `to_fetch`, writing what came; the NotFound for names upstream lacks, if any."""
    from ..upstream.batching import iter_fetch

    try:
        outcomes = list(iter_fetch(ctx.upstream(), to_fetch))
    except UpstreamError as exc:
        decision = on_failure(to_fetch, cached, not_found=isinstance(exc, NotFound))
        if decision is OnFailure.RAISE:
            raise
        warning = f"upstream failed, served cached copies instead: {exc.message}"
        import logging  # here: a cached read should not pay for importing logging

        logging.getLogger("mirror").warning(warning)
        return cached, {n: Source.STALE for n in to_fetch}, [warning], None
    missing: list[str] = []
    for outcome in outcomes:
        _write(ctx, outcome.documents)
        missing.extend(outcome.missing)
    not_found = None
    if missing:
        kept = [n for n in missing if n in cached and cached[n].document.content is not None]
        hint = None
        if kept:
            hint = f"an older copy of {len(kept)} of them is in the store: add --offline to read it"
        not_found = NotFound(missing, hint=hint)
    fetched = [n for n in to_fetch if n not in missing]
    fresh = ctx.store.get_many(fetched)
    return {**cached, **fresh}, {n: Source.UPSTREAM for n in fetched}, [], not_found


def _write(ctx: Context, docs: Sequence[Document]) -> None:
    label = ctx.upstream().label
    ctx.store.put(
        [doc.with_derived_fields() for doc in docs], fetched_at=ctx.clock(), upstream=label
    )


def fetch(
    ctx: Context, names: Iterable[str], mode: Mode, progress: Progress | None = None
) -> FetchReport:
    """Mirror any number of documents: batches of 20, each written in one transaction.

    A batch that still fails after its retries does not stop the run: its names go to
    `report.failed` and are tried once more at the end. Only errors every batch would meet
    (key, permission, or FETCH_STOP_AFTER failures in a row) stop early. Ctrl-C raises
    FetchInterrupted after the batches already written.
    """
    wanted = list(dict.fromkeys(naming.normalize_every(names)))
    report = FetchReport(requested=len(wanted))
    cached = ctx.store.get_many(wanted) if wanted else {}
    # fetch always means "go online for what is not fresh", whatever the caller's offline flag.
    todo = plan(wanted, cached, Mode(max_age=mode.max_age, refresh=mode.refresh), now=ctx.clock())
    report.already_cached = len(wanted) - len(todo.to_fetch)
    if progress:
        progress(report.already_cached, report.requested)
    if not todo.to_fetch:
        return report
    run = _FetchRun(ctx, report, progress)
    names_todo = todo.to_fetch
    batches = [
        names_todo[i : i + limits.MAX_NAMES] for i in range(0, len(names_todo), limits.MAX_NAMES)
    ]
    try:
        failed = run.one_pass(batches)
        if failed and report.stopped is None:
            # A flaky stretch has often passed by the end of the run: one more try each.
            failed = run.one_pass(failed)
    except KeyboardInterrupt:
        report.interrupted = True
        raise FetchInterrupted(report) from None
    report.failed = [name for batch in failed for name in batch]
    if not report.failed:
        report.error = None  # every failure was cured by the second pass
    return report


class _FetchRun:
    """One `fetch`: fetches batches, saves each as it arrives, and keeps the report."""

    def __init__(self, ctx: Context, report: FetchReport, progress: Progress | None) -> None:
        self.ctx = ctx
        self.report = report
        self.progress = progress
        self.upstream = ctx.upstream()

    def save(self, outcome: BatchOutcome) -> None:
        """Write one batch's documents and count it."""
        report = self.report
        _write(self.ctx, outcome.documents)
        report.fetched += len(outcome.documents)
        report.missing.extend(outcome.missing)
        if self.progress:
            self.progress(
                report.already_cached + report.fetched + len(report.missing), report.requested
            )

    def one_pass(self, batches: list[list[str]]) -> list[list[str]]:
        """Fetch and save `batches`; return those that failed or were never tried, in order.

        FETCH_CONCURRENCY batches are in flight at once, so one batch's retry waits (a 503's
        backoff, a 429's Retry-After) do not hold up the others; the shared pacer still spaces
        every call under the quota. Writes stay on this thread, in the order batches arrive.
        A run that must stop starts no more batches and saves those already in flight.
        """
        from ..upstream.batching import fetch_batch

        report = self.report
        failed: set[int] = set()  # id() of each batch that failed
        settled: set[int] = set()  # id() of each batch saved or failed
        in_a_row = 0
        stop: str | None = None  # why no more batches start
        refused = False

        def call(batch: list[str]) -> BatchOutcome:
            return fetch_batch(self.upstream, batch)

        results = in_parallel(
            batches, call, FETCH_CONCURRENCY, "dk-fetch", stopping=lambda: stop is not None
        )
        with closing(results):
            for batch, outcome in results:
                settled.add(id(batch))
                if isinstance(outcome, AuthError | PermissionDenied):
                    # Every other batch would be refused the same way.
                    report.error, stop, refused = outcome, "refused", True
                    failed.add(id(batch))
                elif isinstance(outcome, UpstreamError):
                    import logging  # here: only a failing fetch pays for importing logging

                    logging.getLogger("mirror").warning(
                        "fetch: a batch of %d failed: %s", len(batch), outcome.message
                    )
                    report.error = outcome
                    failed.add(id(batch))
                    in_a_row += 1
                    if in_a_row >= FETCH_STOP_AFTER and stop is None:
                        stop = f"{in_a_row} batches in a row failed"
                elif isinstance(outcome, BaseException):
                    raise outcome
                else:
                    in_a_row = 0
                    self.save(outcome)
        untried = len(batches) - len(settled)
        if refused:
            report.stopped = "upstream refused the key or the API"
        elif stop is not None and untried:
            report.stopped = f"{stop}, so the other {untried} were not tried"
        return [b for b in batches if id(b) in failed or id(b) not in settled]


def prefix_form(prefix: str) -> str:
    """A listing prefix in canonical form, keeping a trailing slash the user typed."""
    trailing = prefix.endswith("/")
    stripped = prefix.rstrip("/")
    if stripped in ("documents", ""):
        return naming.PREFIX
    canonical = naming.normalize(stripped)
    return canonical + "/" if trailing else canonical


def list_documents(ctx: Context, prefix: str | None, limit: int | None) -> Iterator[Summary]:
    """Cached documents by name; `prefix` may be given in any accepted name form."""
    return ctx.store.list_documents(prefix_form(prefix) if prefix else None, limit)


def cached_names(ctx: Context, names: Sequence[str]) -> frozenset[str]:
    """Which of these canonical names the store holds (content or not)."""
    return frozenset(ctx.store.get_many(list(names))) if names else frozenset()


def suggest_names(ctx: Context, name: str, limit: int, exclude: Sequence[str]) -> list[str]:
    """Cached documents nearest to `name`: same path prefix first, then close spelling.

    Only documents with content: a metadata-only row (seen in search results) cannot be
    read offline, so suggesting it would send the reader to another miss.
    """
    from ..search import suggest

    def names_under(prefix: str) -> list[str]:
        return [s.name for s in ctx.store.list_documents(prefix, SUGGEST_POOL, content_only=True)]

    target = naming.normalize(name)
    pool: list[str] = []
    for prefix in suggest.parents(target):
        pool = names_under(prefix)
        if len(pool) > limit + len(exclude):
            break
    if not pool:
        # Nothing under the host: perhaps the host itself is misspelled.
        hosts = suggest.close_hosts(suggest.host_of(target), ctx.store.stats().by_data_source)
        for host in hosts:
            pool += names_under(f"{naming.PREFIX}{host}/")
    return suggest.nearest(target, pool, limit, exclude=exclude)
