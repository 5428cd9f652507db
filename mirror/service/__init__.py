"""The use cases, on one object: every CLI command, tool and route calls `Mirror`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import names as naming
from ..config import Settings
from ..errors import ConfigError, InvalidInput, NetworkForbidden, NotCached, NotFound, UpstreamError
from ..models import CachedDocument, Document
from ..policy import Freshness, freshness
from ..store.store import Stats, Store, Summary

if TYPE_CHECKING:
    import httpx

    from ..snapshots import format as snapshot
    from ..snapshots import lockfile
    from ..upstream import Upstream
    from ..upstream.retry import RetryPolicy
    from . import ci as pins
    from .answers import AnswerResult
    from .search import SearchResult

log = logging.getLogger("mirror")

# get_documents mirrors the API's limit, so a mirror is a drop-in for it.
MAX_GET = 20
# Suggestions rank at most this many names per listing prefix: a miss must stay cheap.
SUGGEST_POOL = 2000

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Served:
    """Where one returned document came from."""

    name: str
    source: str  # "cache", "upstream", or "stale" (an old copy served offline or on error)
    fetched_at: float
    upstream: str


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


class Mirror:
    """A caching mirror: a store in front of an upstream API."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: Store | None = None,
        transport: httpx.BaseTransport | None = None,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
        readonly: bool = False,
    ) -> None:
        self.settings = settings
        # Open the store read-only: it must exist, and nothing may write to it.
        self.readonly = readonly
        self._store = store
        self._transport = transport
        self._retry = retry
        self._upstream: Upstream | None = None
        self.clock = clock

    def __enter__(self) -> Mirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def store(self) -> Store:
        """The store, opened (and migrated) on first use."""
        if self._store is None:
            self._store = Store.open(self.settings.db_url, readonly=self.readonly)
        return self._store

    def upstream(self) -> Upstream:
        """The upstream client, created on first use; refused in offline mode."""
        if self.settings.strict_offline:
            raise NetworkForbidden(
                f"strict offline mode: refusing to contact {self.settings.upstream}",
                hint="this run must use only the store: import a snapshot or `dk-mirror sync "
                "--locked --from SNAPSHOT` beforehand, or drop --strict-offline",
            )
        if self.settings.offline:
            raise ConfigError(
                "offline mode is on, so dk-mirror may not reach the upstream API",
                hint="drop --offline / DK_MIRROR_OFFLINE to go online",
            )
        if self._upstream is None:
            from ..upstream import open_upstream

            self._upstream = open_upstream(
                self.settings, transport=self._transport, retry=self._retry
            )
        return self._upstream

    def close(self) -> None:
        """Release the upstream connections and the store."""
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- get ---------------------------------------------------------------------------------

    def get_documents(
        self,
        names: Sequence[str],
        *,
        offline: bool | None = None,
        max_age: float | None = None,
        refresh: bool = False,
    ) -> GetResult:
        """Up to 20 documents in request order: fresh copies from the store, the rest fetched."""
        if not names:
            raise InvalidInput("no document names given", hint="name at least one document")
        if len(names) > MAX_GET:
            raise InvalidInput(
                f"{len(names)} names given; get_documents takes at most {MAX_GET}",
                hint="use `dk-mirror fetch` (any number of names) and then get them in twenties",
            )
        wanted = naming.normalize_all(names)
        offline = self.settings.offline if offline is None else offline
        max_age = self.settings.max_age if max_age is None else max_age
        cached = self.store.get_many(wanted)
        now = self.clock()
        verdicts = {
            name: freshness(cached.get(name), now=now, max_age=max_age, refresh=refresh)
            for name in wanted
        }
        to_fetch = [n for n in dict.fromkeys(wanted) if verdicts[n] is not Freshness.FRESH]
        sources = {n: "cache" for n in wanted if verdicts[n] is Freshness.FRESH}
        warnings: list[str] = []
        if to_fetch and offline:
            absent = [n for n in to_fetch if verdicts[n] is Freshness.MISSING]
            if absent:
                raise NotCached(absent)
            for name in to_fetch:
                sources[name] = "stale"
            warnings.append(f"offline: served {len(to_fetch)} copy(ies) older than --max-age")
        elif to_fetch:
            cached, fetched_sources, note = self._fetch_for_get(to_fetch, cached, verdicts)
            sources.update(fetched_sources)
            warnings.extend(note)
        return GetResult(
            documents=[cached[n].document for n in wanted],
            served=[
                Served(n, sources[n], cached[n].fetched_at, cached[n].upstream) for n in wanted
            ],
            warnings=warnings,
        )

    def _fetch_for_get(
        self,
        to_fetch: list[str],
        cached: dict[str, CachedDocument],
        verdicts: dict[str, Freshness],
    ) -> tuple[dict[str, CachedDocument], dict[str, str], list[str]]:
        from ..upstream.batching import iter_fetch

        try:
            outcomes = list(iter_fetch(self.upstream(), to_fetch))
        except UpstreamError as exc:
            absent = [n for n in to_fetch if verdicts[n] is Freshness.MISSING]
            if absent or isinstance(exc, NotFound):
                raise
            # stale-if-error: every name has an older copy; serve those and say why.
            warning = f"upstream failed, served cached copies instead: {exc.message}"
            log.warning(warning)
            return cached, {n: "stale" for n in to_fetch}, [warning]
        missing: list[str] = []
        for outcome in outcomes:
            self._write(outcome.documents)
            missing.extend(outcome.missing)
        if missing:
            kept = [n for n in missing if n in cached]
            hint = None
            if kept:
                hint = f"an older copy of {len(kept)} of them is in the store: add --offline to read it"
            raise NotFound(missing, hint=hint)
        fresh = self.store.get_many(to_fetch)
        merged = {**cached, **fresh}
        return merged, {n: "upstream" for n in to_fetch}, []

    def _write(self, docs: Sequence[Document]) -> None:
        label = self.upstream().label
        self.store.put(
            [doc.with_derived_fields() for doc in docs], fetched_at=self.clock(), upstream=label
        )

    # -- fetch -------------------------------------------------------------------------------

    def fetch(
        self,
        names: Iterable[str],
        *,
        refresh: bool = False,
        max_age: float | None = None,
        progress: Progress | None = None,
    ) -> FetchReport:
        """Mirror any number of documents: batches of 20, each written in one transaction."""
        from ..upstream.batching import iter_fetch

        wanted = list(dict.fromkeys(naming.normalize_every(names)))
        report = FetchReport(requested=len(wanted))
        max_age = self.settings.max_age if max_age is None else max_age
        now = self.clock()
        cached = self.store.get_many(wanted) if wanted else {}
        todo = [
            n
            for n in wanted
            if freshness(cached.get(n), now=now, max_age=max_age, refresh=refresh)
            is not Freshness.FRESH
        ]
        report.already_cached = len(wanted) - len(todo)
        if progress:
            progress(report.already_cached, report.requested)
        if not todo:
            return report
        try:
            for outcome in iter_fetch(self.upstream(), todo):
                self._write(outcome.documents)
                report.fetched += len(outcome.documents)
                report.missing.extend(outcome.missing)
                if progress:
                    done = report.already_cached + report.fetched + len(report.missing)
                    progress(done, report.requested)
        except UpstreamError as exc:
            report.error = exc
        return report

    # -- import, listing, status -------------------------------------------------------------

    def import_file(self, path: Path) -> int:
        """Import Document records from a JSONL(.gz) file, all or nothing."""
        from ..records import read_documents

        docs = read_documents(path)
        return self.store.put(docs, fetched_at=self.clock(), upstream=f"import {path.name}")

    def import_sample(self) -> int:
        """Import the sample documents shipped with dk-mirror."""
        from ..records import read_sample

        return self.store.put(read_sample(), fetched_at=self.clock(), upstream="sample")

    # -- search and answers ------------------------------------------------------------------

    def search_documents(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
        offline: bool | None = None,
        fetch: bool = False,
        prefer_recorded: bool = False,
    ) -> SearchResult:
        """One page of chunks: upstream (recorded) online, else a recording or the local index."""
        from . import search as searching

        request = searching.make_request(query, page_size, page_token, filter)
        offline = self.settings.offline if offline is None else offline
        return searching.search(
            self, request, offline=offline, fetch=fetch, prefer_recorded=prefer_recorded
        )

    def answer_query(
        self,
        query: str,
        *,
        filter: str | None = None,
        offline: bool | None = None,
        prefer_recorded: bool = False,
    ) -> AnswerResult:
        """A grounded answer: upstream under the daily quota, else recorded or extractive."""
        from . import answers as answering

        offline = self.settings.offline if offline is None else offline
        return answering.answer(
            self, query, filter_text=filter, offline=offline, prefer_recorded=prefer_recorded
        )

    def suggest_names(self, name: str, limit: int = 3, exclude: Sequence[str] = ()) -> list[str]:
        """Cached documents nearest to `name`: same path prefix first, then close spelling."""
        from ..search import suggest

        target = naming.normalize(name)
        pool: list[str] = []
        for prefix in suggest.parents(target):
            pool = [s.name for s in self.store.list_documents(prefix, SUGGEST_POOL)]
            if len(pool) > limit + len(exclude):
                break
        if not pool:
            # Nothing under the host: perhaps the host itself is misspelled.
            hosts = suggest.close_hosts(suggest.host_of(target), self.stats().by_data_source)
            for host in hosts:
                pool += [
                    s.name
                    for s in self.store.list_documents(f"{naming.PREFIX}{host}/", SUGGEST_POOL)
                ]
        return suggest.nearest(target, pool, limit, exclude=exclude)

    # -- reproducible snapshots -------------------------------------------------------------

    def export_snapshot(self, out: Path, **selection: Any) -> snapshot.Manifest:
        """Write a snapshot file (selection: prefix, data_source, names, lock, since)."""
        from . import ci as pins

        return pins.export(self, out, **selection)

    def import_snapshot(self, path: Path) -> pins.ImportReport:
        """Verify a snapshot, then write it all or nothing."""
        from . import ci as pins

        return pins.import_snapshot(self, path)

    def check_snapshot(self, path: Path, *, max_age: float | None = None) -> pins.CheckReport:
        """Which pinned documents changed upstream (metadata only), and the snapshot's age."""
        from . import ci as pins

        return pins.check(self, path, max_age=max_age)

    def lock(self, requirements: Path) -> list[lockfile.LockEntry]:
        """Resolve a requirements file into lock entries."""
        from . import ci as pins

        return pins.lock(self, requirements)

    def sync_locked(self, lock_path: Path, *, source: Path | None = None) -> pins.SyncReport:
        """Make the store hold exactly the locked bytes."""
        from . import ci as pins

        return pins.sync_locked(self, lock_path, source=source)

    def export_markdown(self, root: Path, *, prefix: str | None = None) -> int:
        """Write the documents as a Markdown tree with an index."""
        from . import ci as pins

        return pins.export_markdown(self, root, prefix=prefix)

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None
    ) -> Iterator[Summary]:
        """Cached documents by name; `prefix` may be given in any accepted name form."""
        if prefix:
            prefix = prefix_form(prefix)
        return self.store.list_documents(prefix, limit)

    def stats(self) -> Stats:
        """Counts and sizes of the store."""
        return self.store.stats()


def prefix_form(prefix: str) -> str:
    """A listing prefix in canonical form, keeping a trailing slash the user typed."""
    trailing = prefix.endswith("/")
    stripped = prefix.rstrip("/")
    if stripped in ("documents", ""):
        return naming.PREFIX
    canonical = naming.normalize(stripped)
    return canonical + "/" if trailing else canonical
