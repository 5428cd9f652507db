"""Documents use cases: get (cache first, plan-driven), fetch any number, import, list, suggest."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import limits
from .. import names as naming
from ..errors import NotCached, NotFound, UpstreamError
from ..models import CachedDocument, Document, Source, Summary, rfc3339
from ..policy import Action, Mode, OnFailure, keeps_stored, on_failure, plan
from .context import Context

log = logging.getLogger("mirror")

# Suggestions rank at most this many names per listing prefix: a miss must stay cheap.
SUGGEST_POOL = 2000

# Names looked up per query when an import compares with the store (SQLite caps parameters).
IMPORT_LOOKUP = 500

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
    """Documents in request order, with where each came from and any warnings.

    Only a partial get (`partial=True`) returns with names `missing`; `error` is then the
    NotCached or NotFound a whole get would have raised, for the caller to raise after output.
    """

    documents: list[Document]
    served: list[Served]
    warnings: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    error: NotCached | NotFound | None = None

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
            },
        }


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


def get_documents(
    ctx: Context, names: Sequence[str], mode: Mode, *, partial: bool = False
) -> GetResult:
    """Up to 20 documents in request order: fresh copies from the store, the rest fetched.

    A name not cached (offline) or not found upstream raises NotCached / NotFound; with
    `partial`, the others are returned and the missing names and that error are reported.
    """
    limits.check_names(names)
    wanted = naming.normalize_all(names)
    cached = ctx.store.get_many(wanted)
    decided = plan(wanted, cached, mode, now=ctx.clock())
    sources = {n: Source.CACHE for n in decided.names(Action.SERVE_CACHED)}
    warnings: list[str] = []
    error: NotCached | NotFound | None = None
    absent = decided.names(Action.NOT_CACHED)
    if absent:
        error = NotCached(absent)
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
        served=[Served(n, sources[n], cached[n].fetched_at, cached[n].upstream) for n in kept],
        warnings=warnings,
        missing=error.names if error is not None else [],
        error=error,
    )


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
        log.warning(warning)
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


@dataclass(slots=True)
class ImportFileReport:
    """What an `import` wrote, and which records it left out because the store's copy is newer."""

    imported: int = 0
    skipped: list[str] = field(default_factory=list)
    store: str = ""

    def to_json(self) -> dict[str, Any]:
        """As `import --json` prints it."""
        return {"imported": self.imported, "skipped": self.skipped, "store": self.store}


def import_file(ctx: Context, path: Path, *, overwrite: bool = False) -> ImportFileReport:
    """Import Document records from a JSONL(.gz) file, all or nothing; a newer stored copy is
    kept unless `overwrite`."""
    from ..records import read_documents

    return _import(ctx, read_documents(path), f"import {path.name}", overwrite)


def import_sample(ctx: Context, *, overwrite: bool = False) -> ImportFileReport:
    """Import the sample documents shipped with dk-mirror (keeping newer stored copies)."""
    from ..records import read_sample

    return _import(ctx, read_sample(), "sample", overwrite)


def _import(
    ctx: Context, docs: Sequence[Document], upstream: str, overwrite: bool
) -> ImportFileReport:
    skipped: list[str] = []
    if not overwrite:
        # A fetched copy may be newer than the file (the shipped sample ages): keep it.
        names = list(dict.fromkeys(d.name for d in docs))
        cached: dict[str, CachedDocument] = {}
        for start in range(0, len(names), IMPORT_LOOKUP):  # bound the SQL's parameter count
            cached.update(ctx.store.get_many(names[start : start + IMPORT_LOOKUP]))
        skipped = [d.name for d in docs if keeps_stored(cached.get(d.name), d.update_time)]
        if skipped:
            keep = set(skipped)
            docs = [d for d in docs if d.name not in keep]
    written = ctx.store.put(docs, fetched_at=ctx.clock(), upstream=upstream)
    return ImportFileReport(written, skipped, ctx.store.url)


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
