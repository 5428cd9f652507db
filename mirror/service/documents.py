"""Documents use cases: get (cache first, plan-driven), fetch any number, import, list, suggest."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import limits
from .. import names as naming
from ..errors import NotCached, NotFound, UpstreamError
from ..models import CachedDocument, Document, Source, Summary, rfc3339
from ..policy import Action, Mode, OnFailure, on_failure, plan
from .context import Context

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

    def to_json(self) -> dict[str, Any]:
        """As `get --json` reports it under `_mirror.served`."""
        return {
            "name": self.name,
            "source": str(self.source),
            "fetchedAt": rfc3339(self.fetched_at),
        }


@dataclass(frozen=True, slots=True)
class GetResult:
    """Documents in request order, with where each came from and any warnings."""

    documents: list[Document]
    served: list[Served]
    warnings: list[str] = field(default_factory=list)

    def to_api(self) -> dict[str, Any]:
        """The BatchGetDocumentsResponse JSON upstream would have returned."""
        return {"documents": [doc.to_api() for doc in self.documents]}


@dataclass(slots=True)
class FetchReport:
    """What a `fetch` did, for the summary line."""

    requested: int = 0
    already_cached: int = 0
    fetched: int = 0
    missing: list[str] = field(default_factory=list)
    error: UpstreamError | None = None

    def to_json(self) -> dict[str, Any]:
        """The summary as `fetch --json` prints it."""
        return {
            "requested": self.requested,
            "alreadyCached": self.already_cached,
            "fetched": self.fetched,
            "missing": self.missing,
            "error": self.error.message if self.error else None,
        }


def get_documents(ctx: Context, names: Sequence[str], mode: Mode) -> GetResult:
    """Up to 20 documents in request order: fresh copies from the store, the rest fetched."""
    limits.check_names(names)
    wanted = naming.normalize_all(names)
    cached = ctx.store.get_many(wanted)
    decided = plan(wanted, cached, mode, now=ctx.clock())
    sources = {n: Source.CACHE for n in decided.names(Action.SERVE_CACHED)}
    warnings: list[str] = []
    absent = decided.names(Action.NOT_CACHED)
    if absent:
        raise NotCached(absent)
    stale = decided.names(Action.SERVE_STALE)
    if stale:
        sources.update((n, Source.STALE) for n in stale)
        warnings.append(f"offline: served {len(stale)} copy(ies) older than --max-age")
    if decided.to_fetch:
        cached, fetched_sources, notes = _fetch_for_get(ctx, decided.to_fetch, cached)
        sources.update(fetched_sources)
        warnings.extend(notes)
    return GetResult(
        documents=[cached[n].document for n in wanted],
        served=[Served(n, sources[n], cached[n].fetched_at, cached[n].upstream) for n in wanted],
        warnings=warnings,
    )


def _fetch_for_get(
    ctx: Context, to_fetch: list[str], cached: dict[str, CachedDocument]
) -> tuple[dict[str, CachedDocument], dict[str, Source], list[str]]:
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
        return cached, {n: Source.STALE for n in to_fetch}, [warning]
    missing: list[str] = []
    for outcome in outcomes:
        _write(ctx, outcome.documents)
        missing.extend(outcome.missing)
    if missing:
        kept = [n for n in missing if n in cached]
        hint = None
        if kept:
            hint = f"an older copy of {len(kept)} of them is in the store: add --offline to read it"
        raise NotFound(missing, hint=hint)
    fresh = ctx.store.get_many(to_fetch)
    return {**cached, **fresh}, {n: Source.UPSTREAM for n in to_fetch}, []


def _write(ctx: Context, docs: Sequence[Document]) -> None:
    label = ctx.upstream().label
    ctx.store.put(
        [doc.with_derived_fields() for doc in docs], fetched_at=ctx.clock(), upstream=label
    )


def fetch(
    ctx: Context, names: Iterable[str], mode: Mode, progress: Progress | None = None
) -> FetchReport:
    """Mirror any number of documents: batches of 20, each written in one transaction."""
    from ..upstream.batching import iter_fetch

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
    try:
        for outcome in iter_fetch(ctx.upstream(), todo.to_fetch):
            _write(ctx, outcome.documents)
            report.fetched += len(outcome.documents)
            report.missing.extend(outcome.missing)
            if progress:
                done = report.already_cached + report.fetched + len(report.missing)
                progress(done, report.requested)
    except UpstreamError as exc:
        report.error = exc
    return report


def import_file(ctx: Context, path: Path) -> int:
    """Import Document records from a JSONL(.gz) file, all or nothing."""
    from ..records import read_documents

    docs = read_documents(path)
    return ctx.store.put(docs, fetched_at=ctx.clock(), upstream=f"import {path.name}")


def import_sample(ctx: Context) -> int:
    """Import the sample documents shipped with dk-mirror."""
    from ..records import read_sample

    return ctx.store.put(read_sample(), fetched_at=ctx.clock(), upstream="sample")


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
    """Cached documents nearest to `name`: same path prefix first, then close spelling."""
    from ..search import suggest

    target = naming.normalize(name)
    pool: list[str] = []
    for prefix in suggest.parents(target):
        pool = [s.name for s in ctx.store.list_documents(prefix, SUGGEST_POOL)]
        if len(pool) > limit + len(exclude):
            break
    if not pool:
        # Nothing under the host: perhaps the host itself is misspelled.
        hosts = suggest.close_hosts(suggest.host_of(target), ctx.store.stats().by_data_source)
        for host in hosts:
            pool += [
                s.name for s in ctx.store.list_documents(f"{naming.PREFIX}{host}/", SUGGEST_POOL)
            ]
    return suggest.nearest(target, pool, limit, exclude=exclude)
