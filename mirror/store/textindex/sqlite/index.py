"""The lexical search index of an SQLite store: a tantivy index in a folder beside the file.

Why tantivy and not SQLite's FTS5, which this replaced (migration 0013): FTS5 called a BM25
function per matching page (a common word took 1 s at p50 at 1M pages), and its index writes
were two thirds of an import's writer time (580 pages/s at 1M). Tantivy scores block-compressed
postings in compiled code (a common word at 1M pages: p50 13-16 ms on one thread, 10 ms in
two shards), and indexes on threads of its own, outside the GIL. Its block-max WAND, which
would skip the blocks that cannot reach the top results, is out of reach: tantivy-py 0.27 wraps
every search's top-docs collector in a MultiCollector, which scores every matching page (seen
in a native profile); a large index is split in shards searched at once instead.

The store stays the source of truth; the folder holds nothing that cannot be rebuilt from it:

- Triggers on `documents` (schema_index.py) append the name of every page written with
  content, changed or deleted to `search_changes`, in the writing transaction, with an
  AUTOINCREMENT id (never reused; its high-water mark stays in sqlite_sequence).
- The folder's `state.json` records the last id the index holds (`seq`) and the analyzer's
  version. An index behind the store is stale: `sync` reads each changed page back, removes
  its entry and adds the current one, commits tantivy, then writes the new `seq`. A crash
  between the two commits leaves `seq` behind, so the same changes are applied again (each is
  idempotent). An index of another version, missing changes that were pruned before it
  applied them, or whose last change the store logged as another page (a store copied back
  from an older file, which reuses the ids it never had) is rebuilt. An index ahead of a
  search's snapshot is used as it is.
- Every search syncs first, inside its read snapshot, so it sees every commit before it; a
  search that finds another process indexing for SEARCH_WAIT seconds (an import holds the
  index until it commits) searches the index as it is, and its results go through the store
  all the same (never a page the store does not hold).
- Each commit also wakes a thread that syncs in the background (indexer.py) and prunes the log
  of what the index holds.
- Large writes commit the index in parts (index_parts.py: tantivy holds what it indexed since
  its last commit in memory). An import publishes some of its pages before its store commits:
  their names go to PENDING first, so after a failure or a crash the next sync puts just those
  pages back as the store holds them, then applies the log, instead of rebuilding.
- One process indexes at a time: a lock file in the folder (folder_lock.py), plus a thread
  lock.
- The index is tantivy indexes in shard folders (index_shards.py): one while it is small; past
  SPLIT_FROM pages, new pages are spread over two, which each search searches at once.

A store on a read-only volume gets its index in the user cache folder instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import tantivy

from ....errors import MirrorError, StoreError
from ...db.compression import inflate
from ...db.disk import index_disk_full, index_failure, index_writes
from .entries import ANALYZER, Entry, analyzer, entry_of, schema
from .folder import LOCK, STATE, keep_private
from .folder_lock import FolderLock
from .native_memory import map_large_blocks, trim
from .parts import Parts, PendingNames
from .repair import REBUILD_WAIT, BackgroundRepair, latest_seq
from .shards import (
    SHARDS,
    Damaged,
    ShardedIndex,
    ShardSearcher,
    ShardWriter,
    commit_key,
    remove_folders,
    shard_folders,
)

log = logging.getLogger("mirror.store")

# Bump when the fields, the analyzer or the sharding change: an index of another version is
# rebuilt (2: split in index_shards.SHARDS shards; 3: `@name` markers in the side column).
VERSION = 3
# Memory for tantivy's indexing buffers, split between the shards' threads (at least 15 MB
# each): larger buffers write fewer, larger segments; this keeps an import's peak RSS bounded.
WRITER_HEAP = 32 << 20
WRITER_THREADS = 2
# Names of pages a bulk write indexed before its store committed (index_parts.PendingNames).
PENDING = "pending.names"
# How long a search waits for another thread or process indexing (usually the changes it is
# about to need) before it searches the index as it is (an import in another process holds
# the index until it commits).
SEARCH_WAIT = 10.0
# Changed pages read back from the store per statement while syncing.
_BATCH = 500
_SEQ = "SELECT seq FROM sqlite_sequence WHERE name = 'search_changes'"
_FIRST_CHANGE = "SELECT min(id) FROM search_changes"
_NAME_AT = "SELECT name FROM search_changes WHERE id = ?"
_CHANGES = "SELECT id, name FROM search_changes WHERE id > ? AND id <= ? ORDER BY id LIMIT ?"
_DOCS = "SELECT name, title, description, content FROM documents WHERE name IN ({marks})"
_ALL_DOCS = (
    "SELECT name, title, description, content FROM documents "
    "WHERE name > ? AND content IS NOT NULL ORDER BY name LIMIT ?"
)
# What an index needs to reflect a snapshot of the store (TextIndex._plan).
CURRENT, BEHIND, REBUILD = "current", "behind", "rebuild"


class TextIndex:
    """One store's tantivy index: opened lazily, synced with the store's change log."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._index: ShardedIndex | None = None
        self._analyzer = analyzer()
        self._schema = schema()
        self._loaded: object = -1  # the commit (_commit_key) the open searcher reflects
        self._thread_lock = threading.RLock()
        self._file_lock = FolderLock(folder / LOCK) if folder is not None else None
        # Why the open index cannot be read (a search met Damaged), until it is rebuilt.
        self._broken: str | None = None
        # Bumped by each rebuild: a failure met on an older searcher is no news.
        self.generation = 0
        # A server's: rebuilds run there, and searches wait for them a little (repair.py).
        self._background: BackgroundRepair | None = None

    @property
    def schema(self) -> tantivy.Schema:
        return self._schema

    def analyze(self, text: str) -> list[str]:
        """`text` as the index's tokens."""
        return list(self._analyzer.analyze(text))

    def _open(self) -> ShardedIndex:
        if self._index is None:
            if self.folder is None:
                shards = [tantivy.Index(self._schema) for _ in range(SHARDS)]
            else:
                try:
                    shards = [self._open_shard(path, reuse=True) for path in self._shards()]
                except (ValueError, OSError) as exc:
                    if index_disk_full(self.folder, exc):  # not damaged: keep it
                        raise index_failure(self.folder, exc) from None
                    # Damaged (a disk that lost files) or of another schema: rebuilt by the
                    # caller (`repair_damage`), holding the index.
                    raise Damaged(str(exc)) from exc
            for shard in shards:
                shard.register_tokenizer(ANALYZER, self._analyzer)
            self._index = ShardedIndex(shards, self.folder)
            self._loaded = -1
        return self._index

    def _shards(self) -> list[Path]:
        assert self.folder is not None
        return shard_folders(self.folder)

    def _open_shard(self, path: Path, *, reuse: bool) -> tantivy.Index:
        path.mkdir(parents=True, exist_ok=True)
        return tantivy.Index(self._schema, path=str(path), reuse=reuse)

    def _clear(self) -> None:
        assert self.folder is not None
        remove_folders(self.folder)
        # And the files of an index of version 1, one tantivy index in the folder itself.
        for path in self.folder.iterdir():
            if path.name != LOCK and path.is_file():
                path.unlink()

    # -- state --------------------------------------------------------------------------

    def _recorded(self) -> dict[str, Any] | None:
        """state.json as written by this version, or None."""
        assert self.folder is not None
        try:
            found = json.loads((self.folder / STATE).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(found, dict) or found.get("version") != VERSION:
            return None
        return found if isinstance(found.get("seq"), int) else None

    def state(self) -> int | None:
        """The change id the index holds up to; None when it must be repaired or rebuilt."""
        if self.folder is None:
            return self._memory_seq
        found = self._recorded()
        return None if found is None or found.get("pending") else int(found["seq"])

    def _interrupted(self) -> int | None:
        """The change id a bulk write that published part of its pages and did not finish
        started from, when the names of those pages are on disk (sync repairs them)."""
        if self.folder is None:
            return None
        found = self._recorded()
        if found is None or not found.get("pending") or not self._pending().exists():
            return None
        return int(found["seq"])

    def _pending(self) -> PendingNames:
        assert self.folder is not None
        return PendingNames(self.folder / PENDING)

    _memory_seq: int | None = None

    def _save_state(self, seq: int, last: str | None, *, pending: bool = False) -> None:
        """Record that the index holds the changes up to id `seq`, and the page logged at it
        (`name_at`; the indexer prunes the log below it, never it). `pending`: and the pages
        named in PENDING, which a bulk write may not have committed to the store."""
        if self.folder is None:
            self._memory_seq = None if pending else seq
            return
        # Written whole, then renamed over the old one: a crash leaves one or the other.
        tmp = self.folder / (STATE + ".tmp")
        state = {"version": VERSION, "seq": seq, "last": last}
        if pending:
            state["pending"] = True
        with index_writes(self.folder):
            with open(tmp, "w") as out:
                json.dump(state, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.folder / STATE)
            keep_private(self.folder)  # and the files tantivy wrote since

    def _forget_state(self) -> None:
        if self.folder is None:
            self._memory_seq = None
        else:
            with contextlib.suppress(FileNotFoundError):
                (self.folder / STATE).unlink()

    # -- locking ------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self, *, wait: float | None = None) -> Iterator[bool]:
        """Hold the index for writing; yields False, holding nothing, when another thread or
        process held it for `wait` seconds (None: as long as it takes)."""
        if not self._thread_lock.acquire(timeout=-1 if wait is None else wait):
            yield False
            return
        try:
            if self._file_lock is None:
                yield True
                return
            assert self.folder is not None
            with index_writes(self.folder):
                if not self.folder.is_dir():
                    self.folder.mkdir(parents=True, exist_ok=True)
                    keep_private(self.folder)
                acquired = self._file_lock.acquire(wait)
            if not acquired:
                yield False
                return
            try:
                yield True
            finally:
                self._file_lock.release()
        finally:
            self._thread_lock.release()

    # -- reading ------------------------------------------------------------------------

    def searcher(self, raw: Any, *, sync: bool = True) -> ShardSearcher:
        """A searcher that reflects the store as `raw` (an sqlite3 connection in a read
        transaction) sees it: stale changes applied first when no one else is indexing, and an
        index that must be rebuilt rebuilt first (a server's: IndexRebuilding while it is).
        Damaged when tantivy cannot read the files (`repair_damage`, then ask again)."""
        if sync:
            self._ready(raw)
        index = self._open()
        # Reloaded when tantivy committed since (a shard's meta.json rewritten), not when the
        # state's id moved: a failed import's pages, published and then repaired, leave the
        # same id.
        key = self._commit_key()
        if key != self._loaded:
            index.reload()
            self._loaded = key
        return index.searcher()

    def _ready(self, raw: Any) -> None:
        if self._background is None:  # a command: rebuild here, then answer
            if self._sync(raw, wait=SEARCH_WAIT) is None:
                self._sync(raw)  # another process holds the index: wait for it
        elif self._sync(raw, wait=SEARCH_WAIT, rebuild=False) is None:
            self._background.await_repair()
            # The repair read the store in a snapshot of its own, older than `raw`'s when it
            # was under way before this search began: apply the changes logged since.
            self._sync(raw, wait=SEARCH_WAIT, rebuild=False)

    def repair_damage(self, exc: Damaged, generation: int) -> None:
        """A search met Damaged on a searcher of `generation`: have the index rebuilt before
        its next `searcher` (rebuilt already since that searcher was made: nothing to do)."""
        if generation != self.generation:
            return
        if self._broken is None:
            log.warning("search index at %s is damaged (%s): rebuilding it", self.folder, exc)
        self._broken = str(exc) or "unreadable"

    def serve(self, connect: Callable[[], Any], wait: float = REBUILD_WAIT) -> None:
        """Make this a server's index: a rebuild runs on a thread of its own (reading the store
        through `connect`, a pooled DBAPI connection), and a search waits for it at most `wait`
        seconds before IndexRebuilding."""
        self._background = BackgroundRepair(connect, lambda raw: self._sync(raw), wait)

    def _commit_key(self) -> object:
        if self.folder is None:
            return object()  # an in-memory index (tests, scratch stores): reloaded each time
        return commit_key(self.folder)

    def lag(self, raw: Any) -> int | None:
        """How many changes the index is behind the store (None: it must be rebuilt)."""
        seq = self.state()
        head = store_seq(raw)
        if seq is None or seq > head or self._plan(raw, head)[0] == REBUILD:
            return None
        return head - seq

    def held(self, raw: Any) -> list[int]:
        """Pages in each shard, the index first synced with the store as `raw` sees it."""
        self.searcher(raw)
        return self._open().held()

    def entry_names(self, raw: Any, batch: int = _BATCH) -> Iterator[list[str]]:
        """The name of every entry the index holds, in batches (as it is: no sync); a
        StoreError saying so when its files cannot be read."""
        try:
            self._open().reload()  # as it is on disk now, whoever wrote it
            yield from self.searcher(raw, sync=False).every_name(batch)
        except Damaged as exc:
            raise StoreError(
                f"the search index at {self.folder} is damaged: {exc}",
                hint="run `dk-mirror index rebuild` (a search rebuilds it too)",
            ) from None

    # -- writing ------------------------------------------------------------------------

    def sync(self, raw: Any, *, wait: float | None = None) -> int:
        """Apply the store's changes the index does not hold yet, reading the store through
        `raw` (its snapshot decides what is applied); returns how many pages were indexed.
        Does nothing when another thread or process has been indexing for `wait` seconds."""
        return self._sync(raw, wait=wait) or 0

    def _plan(self, raw: Any, head: int) -> tuple[str, str]:
        """What the index needs to reflect the store as `raw` sees it (`head`: the last change
        id it sees), and why a rebuild when it is one. Costs a read of state.json and of one
        row of the change log: every search asks."""
        if self._broken is not None:
            return REBUILD, f"damaged ({self._broken})"
        if self.folder is None:
            since, last, pending = self._memory_seq, None, False
        else:
            found = self._recorded()
            if found is None:
                return REBUILD, "missing, or made by another version"
            since, last, pending = int(found["seq"]), found.get("last"), bool(found.get("pending"))
            if pending and not self._pending().exists():
                return REBUILD, "left by a write that did not finish"
        if since is None:
            return REBUILD, "missing"
        if since > head:
            # Newer than this snapshot: another reader synced from a later one (its results
            # still go through this snapshot's store), unless the store as committed now is
            # behind it too: a store copied back from an older file, or another store's index.
            latest = latest_seq(raw) if self.folder is not None else None
            if latest is not None and latest < since:
                return REBUILD, "ahead of its store (another store's, or the store is older)"
            return (BEHIND if pending else CURRENT), ""
        logged = name_at(raw, since) if self.folder is not None else None
        if last is not None and logged is not None and logged != last:
            # The store logged another page at that id: a store copied back from an older file
            # has written other changes under the same ids (or it is another store).
            return REBUILD, "of another store, or of the store before it was copied back"
        if since == head:
            return (BEHIND if pending else CURRENT), ""
        first = raw.execute(_FIRST_CHANGE).fetchone()[0]
        if (first or head + 1) > since + 1:
            return REBUILD, "behind changes the store no longer logs"
        return BEHIND, ""

    def _sync(self, raw: Any, *, wait: float | None = None, rebuild: bool = True) -> int | None:
        """`sync`; None when the index must be rebuilt and is not (`rebuild` False, or another
        thread or process held the index for `wait` seconds): it cannot be searched."""
        head = store_seq(raw)
        plan, _why = self._plan(raw, head)
        if plan == CURRENT:
            return 0
        if plan == REBUILD and not rebuild:
            return None
        with self.locked(wait=wait) as held:
            if not held:
                return None if plan == REBUILD else 0
            plan, why = self._plan(raw, head)  # another may have done it meanwhile
            if plan == CURRENT:
                return 0
            if plan == REBUILD:
                if not rebuild:
                    return None
                if self._broken is None and self.state() is not None:  # damage: said already
                    log.warning("search index at %s is %s: rebuilding it", self.folder, why)
                return self._rebuild(raw, head)
            seq = self.state()
            repair = self._interrupted() if seq is None else None
            since = seq if seq is not None else repair
            assert since is not None
            # Parts committed before the state is saved are applied again after a crash: each
            # change is idempotent (the page's entry removed, its current one added).
            with self._committing() as writer:
                parts = Parts(writer)
                count = 0
                if repair is not None:
                    # An import that failed or died: the pages it published, as the store
                    # holds them now (its own version if it committed, else the one before).
                    for names in self._pending().batches():
                        count += apply_names(writer, raw, names, parts)
                count += apply_changes(writer, raw, since, head, parts=parts)
            self._save_state(head, name_at(raw, head))
            if repair is not None:
                self._pending().clear()
            return count

    def rebuild(self, raw: Any) -> int:
        """Index every page with content again from the store; returns how many."""
        with self.locked():
            return self._rebuild(raw, store_seq(raw))

    def _rebuild(self, raw: Any, head: int) -> int:
        self._forget_state()
        # A new index, not the old one emptied: the old may be of another version's schema.
        self._index = None
        if self.folder is not None and self.folder.is_dir():
            self._clear()
        count = 0
        with self._committing() as writer:
            parts = Parts(writer)
            for rows in all_documents(raw):
                for entry in rows:
                    writer.add(entry.name, entry.document())
                count += len(rows)
                parts.added([entry.name for entry in rows])
        self._save_state(head, name_at(raw, head))
        if self.folder is not None:
            self._pending().clear()
        self._broken = None
        self.generation += 1
        return count

    def _writer(self) -> ShardWriter:
        map_large_blocks()  # before tantivy's threads allocate their arena pages
        return self._open().writer(WRITER_HEAP, WRITER_THREADS)

    @contextlib.contextmanager
    def _committing(self) -> Iterator[ShardWriter]:
        """A writer whose work is committed when the block ends, rolled back if it fails."""
        writer = self._writer()
        try:
            yield writer
            writer.commit()
            trim()
        except BaseException:
            writer.rollback()
            raise
        finally:
            _release(writer)

    @contextlib.contextmanager
    def session(self, catch_up: Callable[[], int]) -> Iterator[Session]:
        """Index a bulk write as it happens: hold the index, catch it up with the store
        (`catch_up` syncs it in a read snapshot), and yield a Session to stage pages into. The
        caller `finish`es it inside the store's transaction, before the commit; when the block
        ends without an error (the store committed), the session commits too."""
        with self.locked():
            catch_up()
            try:
                writer = self._writer()
            except Damaged as exc:
                self.repair_damage(exc, self.generation)
                catch_up()  # rebuilds it
                writer = self._writer()
            seq = self.state()
            if seq is None:
                writer.rollback()
                _release(writer)
                raise RuntimeError("the search index could not be brought up to date")
            if self.folder is not None:
                self._pending().clear()  # of a write the sync above repaired, or finished
            session = Session(self, writer, seq)
            try:
                yield session
                if session.finished:
                    self._commit_after_store(session)
            finally:
                if not session.committed:
                    with contextlib.suppress(Exception):
                        writer.rollback()
                _release(writer)

    @staticmethod
    def _commit_after_store(session: Session) -> None:
        try:
            session.commit()
        except MirrorError as exc:
            # The store has committed: its pages are kept, and the state not saved sends the
            # next sync (a search, the indexer) to index them again.
            log.warning(
                "the pages are stored, but indexing them failed; searches will retry: %s", exc
            )

    def close(self) -> None:
        self._index = None


class Session:
    """Pages staged into the index during one store transaction (TextIndex.session)."""

    def __init__(self, owner: TextIndex, writer: ShardWriter, seq: int) -> None:
        self._owner = owner
        self._writer = writer
        self._start = seq
        self._mark = seq  # the change log's last id whose page the index has staged
        # Entries staged here are published by a part commit before the store commits, so
        # their names and the state saying so go first: if the import then fails or the
        # process dies, the next sync repairs those pages.
        self._parts = Parts(writer, before=self._publishing)
        self._marked = False
        self._head: int | None = None
        self._last: str | None = None  # the page logged at _head
        self.committed = False

    def stage(self, raw: Any, entries: Iterable[Entry], gone: Iterable[str] = ()) -> None:
        """Index these pages' new entries, and remove the entries of pages left without
        content; called after their rows were written, on `raw`, the writing connection."""
        staged: set[str] = set()
        for name in gone:
            self._writer.delete(name)
            staged.add(name)
        for entry in entries:
            self._writer.delete(entry.name)
            self._writer.add(entry.name, entry.document())
            staged.add(entry.name)
        self._parts.added(list(staged))
        # Whatever else this batch's statements logged (a copy written unchanged, a trigger),
        # read back now: a set of every staged name would grow with the import.
        self._catch_up(raw, skip=staged)

    def _publishing(self, names: list[str]) -> None:
        owner = self._owner
        if owner.folder is None:  # an in-memory store: its index is rebuilt instead
            owner._forget_state()
            return
        owner._pending().append(names)
        if not self._marked:
            found = owner._recorded()
            owner._save_state(self._start, found.get("last") if found else None, pending=True)
            self._marked = True

    def _catch_up(self, raw: Any, skip: set[str] | None = None) -> None:
        head = store_seq(raw)
        apply_changes(self._writer, raw, self._mark, head, skip=skip, parts=self._parts)
        self._mark = head

    def finish(self, raw: Any) -> None:
        """Inside the store's transaction, before it commits: apply the changes it logged that
        were not staged (pages written another way), and note the log's last id."""
        self._catch_up(raw)
        self._head = self._mark
        self._last = name_at(raw, self._mark)

    @property
    def finished(self) -> bool:
        return self._head is not None

    def commit(self) -> None:
        """After the store committed: publish the staged pages and record the log id."""
        if self._head is None:
            raise RuntimeError("finish() the session inside the store's transaction first")
        self._writer.commit()
        self.committed = True
        self._owner._save_state(self._head, self._last)
        if self._owner.folder is not None:
            self._owner._pending().clear()


def _release(writer: ShardWriter) -> None:
    # Tantivy frees its lock on the index when the writer is gone; waiting for its merges
    # consumes it (merging threads finish the segments they started).
    with contextlib.suppress(Exception):
        writer.wait_merging_threads()
    trim()


def name_at(raw: Any, seq: int) -> str | None:
    """The page the store's change log holds at id `seq` (None: pruned, or not logged yet)."""
    row = raw.execute(_NAME_AT, (seq,)).fetchone()
    return str(row[0]) if row else None


def store_seq(raw: Any) -> int:
    """The id of the last change the store logged (0 before the first)."""
    row = raw.execute(_SEQ).fetchone()
    return int(row[0]) if row else 0


def apply_changes(
    writer: ShardWriter,
    raw: Any,
    after: int,
    head: int,
    skip: set[str] | None = None,
    parts: Parts | None = None,
) -> int:
    """Stage the changes logged after id `after` up to `head`: each named page's old entry
    removed, its current one added if it still has content. Returns how many were added."""
    count = 0
    while after < head:
        rows = raw.execute(_CHANGES, (after, head, _BATCH)).fetchall()
        if not rows:
            break
        after = rows[-1][0]
        names = list(dict.fromkeys(name for _, name in rows if not skip or name not in skip))
        if names:
            count += apply_names(writer, raw, names, parts)
    return count


def apply_names(writer: ShardWriter, raw: Any, names: list[str], parts: Parts | None = None) -> int:
    """Stage these pages as the store holds them: each one's entry removed, its current one
    added if it has content. Returns how many were added."""
    count = 0
    found = {
        name: (title, description, content)
        for name, title, description, content in raw.execute(
            _DOCS.format(marks=", ".join("?" * len(names))), names
        )
    }
    for name in names:
        writer.delete(name)
        stored = found.get(name)
        if stored is not None and stored[2] is not None:
            title, description, content = stored
            text = inflate(content) or ""
            writer.add(name, entry_of(name, title, description, text).document())
            count += 1
    if parts is not None:
        parts.added(names)
    return count


def all_documents(raw: Any) -> Iterator[list[Entry]]:
    """Every page with content, as entries, in batches (name order)."""
    after = ""
    while True:
        rows = raw.execute(_ALL_DOCS, (after, _BATCH)).fetchall()
        if not rows:
            return
        yield [entry_of(n, t, d, inflate(c) or "") for n, t, d, c in rows]
        after = rows[-1][0]
