"""`Mirror`: the use cases behind one typed façade; every CLI command, MCP tool and HTTP route
calls it.

Each use-case family lives in its own module and takes a `Context` (store, upstream, clock,
settings), never the `Mirror`: documents.py (get, fetch, import, list), search.py, answers.py,
ci.py (snapshots, lock, sync, Markdown export), crawl.py (discover and mirror a site). `Mirror` owns the store and the upstream client,
opens them on first use, and is the only way the shells reach either.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import ConfigError, NetworkForbidden
from ..models import Health, Stats, Summary
from ..policy import Mode
from . import documents, imports
from .context import Context
from .documents import (
    FetchInterrupted,
    FetchReport,
    GetResult,
    Progress,
    Served,
    prefix_form,
)
from .imports import ImportFileReport

if TYPE_CHECKING:
    import threading

    from ..changes.events import ChangeEvent, ChangeFilter
    from ..exports.run import ExportReport
    from ..models import Version
    from ..snapshots.diff import Diff
    from ..snapshots.format import Manifest, Snapshot
    from ..snapshots.lock_report import PageChange
    from ..snapshots.lockcheck import LockDrift
    from ..snapshots.lockfile import LockEntry
    from ..snapshots.read import VerifyReport
    from ..store.api import StoreAccess
    from ..store.db.migrate import SchemaStatus
    from ..store.reader import Reader
    from ..store.store import Store
    from ..store.textindex.api import IndexState
    from ..symbols.model import Symbol
    from ..upstream import Upstream
    from ..upstream.pacing import Pacing
    from ..upstream.retry import RetryPolicy
    from ..upstream.stats import UpstreamStats
    from .answers import AnswerResult
    from .ci import CheckReport, ImportReport, SyncReport
    from .copying import CopyReport
    from .crawl import CrawlSpec
    from .crawl_reports import CrawlOptions, CrawlProgress, CrawlReport
    from .forked_dense import Helper
    from .history import VersionDiff
    from .outline import Outline, OutlineCache, Suggestion
    from .probe import ProbeReport
    from .refresh import RefreshReport
    from .search import SearchResult
    from .semantic import Embedding, SemanticStatus

__all__ = [
    "FetchInterrupted",
    "FetchReport",
    "GetResult",
    "ImportFileReport",
    "Mirror",
    "Mode",
    "Served",
    "prefix_form",
]


class Mirror:
    """A caching mirror: a store in front of an upstream API."""

    def __init__(
        self,
        settings: Settings,
        *,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
        upgrade: bool = True,
        reader: bool = False,
        readonly: bool = False,
        read_only_ok: bool = False,
        as_of: float | None = None,
    ) -> None:
        # `as_of`: every read answers as the store was at that instant (Unix seconds), from
        # its kept history; the past is read-only and offline.
        self.as_of = as_of
        if as_of is not None:
            settings = replace(settings, offline=True)
            readonly = True
        self.settings = settings
        # `read_only_ok`: the caller never writes (a server that does not fetch): a store that
        # exists but cannot be written is then opened read-only rather than refused.
        self._read_only_ok = read_only_ok
        # `readonly`: the command only reads: the store must exist and is opened read-only
        # (a read-only file, folder or mount works), never created or written.
        self.readonly = readonly
        self.clock = clock
        self._retry = retry
        self._upgrade = upgrade
        # `reader`: the caller is one thread and expects to only read (a CLI command); an
        # existing SQLite store is then read with sqlite3 alone, which starts without
        # importing SQLAlchemy (a write still works: the Reader opens the full Store for it).
        self._use_reader = reader
        self._store: StoreAccess | None = None
        self._upstream: Upstream | None = None
        self._context: Context | None = None
        self._outline: OutlineCache | None = None
        self._embedding: Embedding | None = None
        self._warming: threading.Thread | None = None  # a server's warm-up search (prepare)

    def __enter__(self) -> Mirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the upstream connections and the store."""
        if self._warming is not None:
            # A server stopped as it starts: its warm-up search is still reading the store.
            self._warming.join()
            self._warming = None
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None
        if self._store is not None:
            self._store.close()
            self._store = None
        self._context = None

    # -- what the use cases run on -----------------------------------------------------------

    def _ctx(self) -> Context:
        """The use cases' context, opening (and migrating) the store on first use."""
        if self._context is None:
            self._store = self._open_reader() or self._open_store()
            if self.settings.semantic:
                from .semantic import watch

                # Each write's documents embedded after its commit (semantic search).
                watch(self._store, self._embedding_sink())
            if self.as_of is not None:
                from ..store.as_of_view import AsOfStore

                self._store = AsOfStore(self._store, self.as_of)
            self._context = Context(
                self.settings, self._store, self._open_upstream, self.clock, self.as_of
            )
        return self._context

    def _open_reader(self) -> Reader | None:
        if not self._use_reader:
            return None
        from ..store.reader import Reader

        return Reader.open(
            self.settings.db_url,
            upgrade=self._upgrade,
            readonly=self.readonly,
            keep_versions=self.settings.keep_versions,
        )

    def _open_store(self) -> Store:
        from ..store.db.engine import exists_read_only
        from ..store.store import Store

        url = self.settings.db_url
        readonly = self.readonly or (self._read_only_ok and exists_read_only(url))
        return Store.open(
            url, upgrade=self._upgrade, readonly=readonly, keep_versions=self.settings.keep_versions
        )

    def _open_upstream(self) -> Upstream:
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
                self.settings, retry=self._retry, pacers=self._shared_pacers()
            )
        return self._upstream

    def _shared_pacers(self) -> dict[str, Pacing] | None:
        """Quota buckets shared through the store (None before it is open: in-process ones)."""
        if self._store is None:
            return None
        from .pacing import pacers

        return pacers(self._store, self.settings, self._retry)

    def upstream_stats(self) -> UpstreamStats:
        """Upstream calls so far: retries, 429s, seconds waiting for quota (for progress)."""
        if self._upstream is None:
            from ..upstream.stats import UpstreamStats

            return UpstreamStats()
        return self._upstream.stats

    def prepare(self, *, online: bool, concurrency: int | None = None) -> None:
        """Open the store (and, when `online`, the upstream client) before serving requests.

        A server's requests run on many threads at once; opening both first avoids racing to
        open them, and a setup problem (no key, a bad store) stops the start instead of
        failing every request. The Reader's sqlite3 connection serves one thread, so a server
        always runs on the full Store (`dk-mirror --offline serve` asks for a Reader);
        `concurrency` sizes its connections to the server's worker threads.
        """
        if self._use_reader:
            self._use_reader = False
            self.close()  # drops a Reader opened already; the store reopens below
        ctx = self._ctx()
        if concurrency is not None:
            from ..store.store import Store

            # A server's worker threads use the store at once: connections for each of them
            # (the full Store: the Reader was dropped above).
            store = self._beneath()
            assert isinstance(store, Store)
            store.size_for(concurrency)
        if online:
            ctx.upstream()
        from . import warmup

        # The model loads and a first search runs now, in the background, not on a query
        # (once: an app built twice on one Mirror, as tests do, needs one warm-up).
        if self._warming is None:
            self._warming = warmup.for_serving(ctx)

    def store_generation(self) -> int | None:
        """A number that changes whenever anyone commits to the store (an answer cache's key);
        None when the store cannot tell (PostgreSQL, a Reader), so nothing may be cached."""
        from ..store.store import Store

        self._ctx()
        store = self._beneath()
        return store.generation() if isinstance(store, Store) else None

    def _beneath(self) -> StoreAccess | None:
        """The store itself, beneath an as-of view when there is one."""
        from ..store.as_of_view import AsOfStore

        store = self._store
        return store.store if isinstance(store, AsOfStore) else store

    def default_mode(self) -> Mode:
        """The mode the settings imply (offline, max age), for callers that build none."""
        return Mode(offline=self.settings.offline, max_age=self.settings.max_age)

    # -- documents ---------------------------------------------------------------------------

    def get_documents(
        self, names: Sequence[str], mode: Mode | None = None, *, partial: bool = False
    ) -> GetResult:
        """Up to 20 documents in request order: fresh copies from the store, the rest fetched
        (`partial`: return what there is, naming the rest, instead of raising)."""
        return documents.get_documents(
            self._ctx(), names, mode or self.default_mode(), partial=partial
        )

    def fetch(
        self, names: Iterable[str], mode: Mode | None = None, progress: Progress | None = None
    ) -> FetchReport:
        """Mirror any number of documents: batches of 20, each written in one transaction."""
        return documents.fetch(self._ctx(), names, mode or self.default_mode(), progress)

    def import_file(self, path: Path, *, overwrite: bool = False) -> ImportFileReport:
        """Import Document records from a JSONL(.gz) file, all or nothing (a newer stored copy
        is kept, and reported as skipped, unless `overwrite`)."""
        return imports.import_file(self._ctx(), path, overwrite=overwrite)

    def import_files(self, paths: Sequence[Path], *, overwrite: bool = False) -> ImportFileReport:
        """Import several JSONL(.gz) files as one import, all or nothing."""
        return imports.import_files(self._ctx(), paths, overwrite=overwrite)

    def import_sample(self, *, overwrite: bool = False) -> ImportFileReport:
        """Import the sample documents shipped with dk-mirror (newer stored copies kept)."""
        return imports.import_sample(self._ctx(), overwrite=overwrite)

    def list_documents(
        self, prefix: str | None = None, limit: int | None = None
    ) -> Iterator[Summary]:
        """Cached documents by name; `prefix` may be given in any accepted name form."""
        return documents.list_documents(self._ctx(), prefix, limit)

    def pruned_then(self, prefix: str | None = None) -> list[str]:
        """As of a past time: the names (under `prefix`) whose version of then was pruned."""
        if self.as_of is None:
            return []
        at = self.as_of
        return self._ctx().store.as_of(at, prefix=prefix_form(prefix) if prefix else None).pruned

    def provenance(self, names: Sequence[str]) -> list[Served]:
        """Where the store's copies of `names` came from and when (those it holds, in order):
        what an agent needs to tell how fresh each page it read is."""
        from .documents import provenance

        return provenance(self._ctx(), names)

    def cached_names(self, names: Sequence[str]) -> frozenset[str]:
        """Which of these canonical names the store holds."""
        return documents.cached_names(self._ctx(), names)

    def suggest_names(self, name: str, limit: int = 3, exclude: Sequence[str] = ()) -> list[str]:
        """Cached documents nearest to `name`: same path prefix first, then close spelling."""
        return documents.suggest_names(self._ctx(), name, limit, exclude)

    def outline(self, *, wait: bool | None = True) -> Outline | None:
        """The page tree and type-ahead index of the store, rebuilt in the background after
        changes (meanwhile the previous one answers). The first build runs now if `wait`,
        else in the background (None until ready); `wait=None`: now only for a small store."""
        from .outline import INLINE_BUILD_PAGES, OutlineCache

        if self._outline is None:
            self._outline = OutlineCache()
        if wait is None:
            wait = self._outline.ready or self.stats().with_content <= INLINE_BUILD_PAGES
        return self._outline.get(self._ctx(), self.store_generation(), wait=wait)

    def typeahead(self, query: str, limit: int = 10) -> list[Suggestion]:
        """Symbols, titles and headings starting with `query`, then local full-text pages;
        never upstream."""
        from .outline import local_full_text, suggest

        return suggest(self.outline(wait=None), query, limit, local_full_text(self._ctx()))

    # -- refresh and history -----------------------------------------------------------------

    def refresh(
        self,
        *,
        older_than: float | None = None,
        prefix: str | None = None,
        concurrency: int | None = None,
        progress: Progress | None = None,
    ) -> RefreshReport:
        """Bring stored documents up to date: compare updateTime through the BASIC view and
        refetch only what changed (raises RefreshInterrupted on Ctrl-C, after saving)."""
        from . import refresh

        return refresh.refresh(
            self._ctx(),
            older_than=older_than,
            prefix=prefix_form(prefix) if prefix else None,
            concurrency=concurrency or refresh.DEFAULT_CONCURRENCY,
            progress=progress,
        )

    def history(self, name: str) -> list[Version]:
        """The kept versions of a document, newest first (the current one marked)."""
        from . import history

        return history.history(self._ctx(), name)

    def diff_versions(
        self, name: str, *, old: str | None = None, new: str | None = None
    ) -> VersionDiff:
        """A unified diff between two versions (number or hash prefix; default previous ->
        current)."""
        from . import history

        return history.diff(self._ctx(), name, old, new)

    def changes(self, wanted: ChangeFilter | None = None) -> list[ChangeEvent]:
        """The change log's events `wanted` selects (default: the newest 100), newest first."""
        from ..changes.events import ChangeFilter

        return self._ctx().store.changes(wanted or ChangeFilter())

    def list_changes(
        self,
        *,
        since: str | None = None,
        prefix: str | None = None,
        lock: Path | None = None,
        kind: str | None = None,
        limit: int = 100,
        before_id: int | None = None,
        names: frozenset[str] | None = None,
    ) -> list[ChangeEvent]:
        """What changed, newest first: `since` a duration (7d), an event id or a date; under
        `prefix`; of a lock file's documents (or of `names`); of a kind or class; at most
        `limit`."""
        from . import changes

        return changes.list_changes(
            self._ctx(), since=since, prefix=prefix, lock=lock, kind=kind, limit=limit,
            before_id=before_id, names=names,
        )  # fmt: skip

    @staticmethod
    def feed_lock(path: Path) -> tuple[str, frozenset[str]]:
        """A lock file's feed id (`?lock=` of the change feeds) and the names it pins."""
        from . import changes

        return changes.lock_id(path), changes.lock_names(path)

    def prune_history(self, *, keep: int | None = None, name: str | None = None) -> int:
        """Drop all but the newest `keep` versions (default DK_MIRROR_KEEP_VERSIONS) of a
        document, or of every document; returns how many versions went."""
        from . import history

        chosen = self.settings.keep_versions if keep is None else keep
        return history.prune(self._ctx(), chosen, name)

    def crawl(
        self,
        spec: CrawlSpec,
        options: CrawlOptions | None = None,
        progress: Callable[[CrawlProgress], None] | None = None,
    ) -> CrawlReport:
        """Discover and mirror documents from seeds, links and searches (resumable: the same
        spec continues where an interrupted run stopped); CrawlInterrupted on Ctrl-C."""
        from . import crawl

        chosen = options or crawl.CrawlOptions(mode=self.default_mode())
        return crawl.crawl(self._ctx(), spec, chosen, progress)

    # -- search and answers ------------------------------------------------------------------

    def search_documents(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
        mode: Mode | None = None,
        fetch: bool = False,
    ) -> SearchResult:
        """One page of chunks: upstream (recorded) online, else a recording or the local index."""
        from . import search

        request = search.make_request(query, page_size, page_token, filter)
        chosen = mode or self.default_mode()
        search.check_fetch(chosen, fetch)  # a usage error, before the store is opened
        return search.search(self._ctx(), request, chosen, fetch=fetch)

    def warm_search(
        self,
        query: str,
        *,
        page_size: int | None = None,
        page_token: str | None = None,
        filter: str | None = None,
        mode: Mode | None = None,
        helper: Helper | None = None,
    ) -> bool:
        """For a process that runs one search (the CLI): start loading the embedding model
        and embedding `query` in the background when the local ranking will use vectors,
        before `search_documents` is asked the same. Says whether it started. `helper`: a
        process forked at the command's start to rank with vectors (cli/start.py,
        service/forked_dense.py), asked here or dismissed."""
        from . import search, warmup

        request = search.make_request(query, page_size, page_token, filter)
        chosen = mode or self.default_mode()
        if not warmup.may_rank_with_vectors(request, chosen):
            if helper is not None:
                helper.dismiss()
            return False  # online: upstream answers; the store is not even opened here
        return warmup.for_one_search(self._ctx(), request, chosen, helper)

    def snippets(
        self, query: str, contents: Sequence[str], parents: Sequence[str] | None = None
    ) -> list[list[tuple[str, bool]]]:
        """The snippet of each chunk text of a page of results for `query`: (segment, marked)
        pairs on one line, the query's words marked. `parents`: each chunk's page, whose link
        definitions say which `[label]` is a link (shown as its text)."""
        from . import search

        return search.snippets(self._ctx().store, query, contents, parents)

    def warm_answer(
        self,
        query: str,
        *,
        filter: str | None = None,
        mode: Mode | None = None,
        helper: Helper,
    ) -> bool:
        """For a process that runs one answer (the CLI): ask `helper` (forked at the
        command's start: cli/start.py) for the dense ranking an offline extractive answer
        to `query` quotes from, before `answer_query` is asked the same; dismiss it when
        the answer ranks nothing with vectors. Says whether it was asked."""
        from . import warmup

        chosen = mode or self.default_mode()
        return warmup.for_one_answer(self._ctx(), query, filter, chosen, helper)

    def answer_query(
        self, query: str, *, filter: str | None = None, mode: Mode | None = None
    ) -> AnswerResult:
        """A grounded answer: upstream under the daily quota, else recorded or extractive."""
        from . import answers

        return answers.answer(
            self._ctx(), query, filter_text=filter, mode=mode or self.default_mode()
        )

    # -- reproducible snapshots -------------------------------------------------------------

    def export_snapshot(
        self,
        out: Path,
        *,
        prefix: str | None = None,
        data_source: str | None = None,
        names: Sequence[str] | None = None,
        lock: Path | None = None,
        since: Path | None = None,
    ) -> Manifest:
        """Write a snapshot file of the selected documents (a delta with `since`)."""
        from . import ci

        return ci.export(
            self._ctx(),
            out,
            prefix=prefix_form(prefix) if prefix else None,
            data_source=data_source,
            names=names,
            lock=lock,
            since=since,
        )

    def import_snapshot(self, path: Path) -> ImportReport:
        """Verify a snapshot, then write it all or nothing."""
        from . import ci

        return ci.import_snapshot(self._ctx(), path)

    def check_snapshot(self, path: Path, *, max_age: float | None = None) -> CheckReport:
        """Which pinned documents changed upstream (metadata only), and the snapshot's age."""
        from . import ci

        return ci.check(self._ctx(), path, max_age=max_age)

    def lock(self, requirements: Path, output: Path | None = None) -> list[LockEntry]:
        """Resolve a requirements file into lock entries (written to `output` when given)."""
        from . import ci

        return ci.lock(self._ctx(), requirements, output)

    @staticmethod
    def check_lock(requirements: Path, lock_path: Path) -> LockDrift:
        """How a lock differs from its requirements file (no store, no network)."""
        from . import ci

        return ci.check_lock(requirements, lock_path)

    def lock_page_changes(self, lock_path: Path) -> list[PageChange]:
        """Pinned pages the store holds in another version than the lock (changed, gone
        upstream, or new under a locked prefix), from the store alone."""
        from ..snapshots.lockfile import read_lock_path
        from . import lock_pages

        return lock_pages.page_changes(self._ctx(), read_lock_path(lock_path))

    def sync_locked(self, lock_path: Path, *, source: Path | None = None) -> SyncReport:
        """Make the store hold exactly the locked bytes."""
        from . import ci

        return ci.sync_locked(self._ctx(), lock_path, source=source)

    def export(
        self,
        format_name: str,
        out: Path,
        *,
        prefix: str | None = None,
        lock: Path | None = None,
        options: Mapping[str, Any] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ExportReport:
        """Export the selected documents as `format_name` (md, site, llms, ...) into `out`."""
        from ..exports.run import export
        from ..exports.source import Selection

        selection = Selection(prefix=prefix_form(prefix) if prefix else None, lock=lock)
        return export(self._ctx().store, format_name, out, selection, options, progress)

    def export_markdown(self, root: Path, *, prefix: str | None = None) -> int:
        """Write the documents as a Markdown tree with an index (`export("md", ...)`)."""
        return self.export("md", root, prefix=prefix).pages

    @staticmethod
    def verify_snapshot(path: Path, *, max_document_bytes: int | None = None) -> VerifyReport:
        """Recompute every hash of a snapshot file (no store, no network)."""
        from ..snapshots.read import verify

        if max_document_bytes is None:
            return verify(path)
        return verify(path, max_document_bytes=max_document_bytes)

    @staticmethod
    def read_snapshot(path: Path) -> Snapshot:
        """A fully verified snapshot (raises naming every bad document)."""
        from ..snapshots.read import read

        return read(path)

    @staticmethod
    def diff_snapshots(a: Snapshot, b: Snapshot) -> Diff:
        """Documents added, removed and changed from snapshot `a` to snapshot `b`."""
        from ..snapshots.diff import diff

        return diff(a, b)

    def probe_upstream(self) -> ProbeReport:
        """One real, cheap upstream request (a metadata-only get of a sample document, tried
        once): ok, no key, bad key, API disabled, over quota or unreachable."""
        from ..records import read_sample
        from .probe import probe_once

        # _open_upstream refuses as for any other use case (offline, strict offline).
        return probe_once(self.settings, self._open_upstream, read_sample()[0].name)

    # -- the store itself --------------------------------------------------------------------

    def missing_store(self) -> str | None:
        """The path of the SQLite store file when it does not exist yet (opening would create
        it), else None; looked up without opening anything."""
        from pathlib import Path

        from ..store.reader import sqlite_path

        path = sqlite_path(self.settings.db_url)
        return path if path is not None and not Path(path).exists() else None

    @property
    def store_url(self) -> str:
        """The store's URL, password hidden (for messages and `status`)."""
        return self._ctx().store.url

    def stats(self) -> Stats:
        """Counts and sizes of the store."""
        return self._ctx().store.stats()

    def health(self, *, integrity: bool = False) -> Health:
        """One report on the store and the configuration (`integrity`: run quick_check)."""
        store = self._ctx().store
        settings = self.settings
        return Health(
            store=store.facts(integrity=integrity),
            stats=store.stats(),
            upstream=settings.upstream,
            transport=settings.transport,
            offline=settings.offline,
            api_key_set=bool(settings.api_key),
            sqlite_version=sqlite3.sqlite_version,
        )

    def semantic_status(self) -> SemanticStatus:
        """Whether hybrid search is on, with which model, and what waits to be embedded."""
        from . import semantic

        return semantic.status(self._ctx())

    def _embedding_sink(self) -> Embedding:
        if self._embedding is None:
            from .semantic import Embedding

            self._embedding = Embedding()
        return self._embedding

    def show_embedding(self, progress: Callable[[int, int], None] | None) -> None:
        """Report the embedding after each write to `progress` (done, total); None stops."""
        self._embedding_sink().progress = progress

    @property
    def embedding(self) -> Embedding:
        """What this Mirror's writes embedded for semantic search so far, and in how long."""
        return self._embedding_sink()

    def build_index(
        self, *, rebuild: bool = False, progress: Callable[[int, int], None] | None = None
    ) -> int:
        """Embed the documents without a current vector (`rebuild`: all); turns hybrid
        search on. Needs the `semantic` extra. Returns how many were embedded."""
        from . import semantic

        return semantic.index(self._ctx(), rebuild=rebuild, progress=progress)

    def schema_status(self) -> SchemaStatus:
        """The store's schema revision and the newest this version knows (no upgrade)."""
        from ..store.db.migrate import schema_status

        return schema_status(self.settings.db_url)

    def upgrade_schema(self) -> SchemaStatus:
        """Upgrade the store's schema to the newest revision; returns the new status."""
        from ..store.db.migrate import schema_status, upgrade_url

        upgrade_url(self.settings.db_url)
        return schema_status(self.settings.db_url)

    def copy_store(
        self, destination: str, progress: Callable[[str, int], None] | None = None
    ) -> CopyReport:
        """Copy this store into the empty store at `destination`, verified by snapshot roots."""
        from .copying import copy_store

        return copy_store(self._ctx(), destination, progress)

    def check_index(self) -> IndexState:
        """Compare the local search index with the stored documents (reads every row)."""
        return self._ctx().store.check_index()

    def rebuild_index(self) -> int:
        """Rebuild the local search index from the stored documents; returns how many."""
        return self._ctx().store.rebuild_index()

    def symbol_exact(self, name: str) -> Symbol | None:
        """The API symbol called `name` (case folded) whose page is stored, or None."""
        return self._ctx().store.symbol_exact(name)

    def symbol_lookup(self, prefix: str, limit: int = 20) -> list[Symbol]:
        """Up to `limit` API symbols whose name, or else whose last part, starts with
        `prefix`: the exact name first, then the others in order."""
        return self._ctx().store.symbol_lookup(prefix, limit)

    def rebuild_symbols(self) -> int:
        """Read every stored page's symbols again (one transaction); how many entries."""
        return self._ctx().store.rebuild_symbols()

    def symbol_list(self) -> list[Symbol]:
        """Every API symbol whose page is stored, one per name, by name."""
        return self._ctx().store.symbol_list()
