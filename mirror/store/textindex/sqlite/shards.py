"""The search index as SHARDS tantivy indexes; a large index has pages in each, and every
search searches them at the same time, each on a thread of its own.

Why: tantivy-py scores every page a query matches (text_index.py), on one thread per search.
Split in two, a search scores about half the pages on each of two cores, and the GIL is released
while tantivy searches.

Why not always: each shard scores with its own statistics (page counts, average lengths), and
on a small index a rare word's weight differs between two halves enough to reorder close
results (the relevance suite lost a hit@1 split by name hash). So every page goes to shard 0
until it holds SPLIT_FROM pages; from then on each page written goes to the shard of its name's
hash. A small index is one tantivy index, searched as before; a large one holds enough pages in
each shard that their statistics agree. Pages never move by themselves: a page written again
goes where the rule sends it then, and every shard forgets its old entry (deletes go to all).

A commit commits every shard in turn. A crash between two shards' commits is one more case of
tantivy committed and the state not saved: the changes are applied again (text_index.py).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import os
import shutil
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, NamedTuple, ParamSpec, TypeVar

import tantivy

from ...db.disk import index_failure, index_writes

SHARDS = 2
# Pages shard 0 holds alone before pages are spread over the shards. Below it a search takes a
# few ms on one thread (a two-word query at 100,000 pages: p50 about 2 ms).
SPLIT_FROM = 100_000
# Entries read per search when walking every entry (index check).
_WALK = 20_000
# tantivy wants at least 15 MB of indexing memory per thread.
_MIN_HEAP = 15 << 20
# Threads searching the shards other than the caller's own, shared by every searching thread.
_POOL_THREADS = 8
_pool: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _searching_pool() -> concurrent.futures.ThreadPoolExecutor:
    """This process's pool (a child forked from a process with one gets a new one: the
    parent's threads do not exist in it)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            pool = concurrent.futures.ThreadPoolExecutor(_POOL_THREADS, "dk-search")
            _pool = (os.getpid(), pool)
        return _pool[1]


def shard_of(name: str) -> int:
    return zlib.crc32(name.encode()) % SHARDS


def shard_folders(folder: Path) -> list[Path]:
    return [folder / f"shard-{i}" for i in range(SHARDS)]


def remove_folders(folder: Path) -> None:
    """The shards' folders under `folder`, gone (an index cleared for a rebuild)."""
    for path in shard_folders(folder):
        shutil.rmtree(path, ignore_errors=True)


def commit_key(folder: Path) -> tuple[tuple[int, int, int], ...] | None:
    """What changes whenever tantivy commits a shard (its meta.json rewritten); None while a
    shard has none."""
    key = []
    for path in shard_folders(folder):
        try:
            meta = os.stat(path / "meta.json")
        except OSError:
            return None
        key.append((meta.st_mtime_ns, meta.st_size, meta.st_ino))
    return tuple(key)


class Damaged(Exception):
    """Tantivy could not read an index's files (a garbled meta.json, a truncated segment): the
    folder must be rebuilt from the store (index.TextIndex repairs it)."""


_P = ParamSpec("_P")
_R = TypeVar("_R")


def reading(method: Callable[_P, _R]) -> Callable[_P, _R]:
    """`method`, with tantivy's failures to read its files raised as Damaged. Tantivy raises
    ValueError for every error; the queries are built from typed objects (search.py), so what
    fails while reading an index that opened is its files."""

    @wraps(method)
    def read(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(*args, **kwargs)
        except ValueError as exc:
            raise Damaged(str(exc)) from exc

    return read


class Hit(NamedTuple):
    shard: int
    address: Any  # tantivy.DocAddress in that shard


class ShardedIndex:
    """The shards of one index: tantivy.Index objects opened on the same schema, in `folder`
    (None: in memory)."""

    def __init__(self, shards: Sequence[tantivy.Index], folder: Path | None = None) -> None:
        self.shards = list(shards)
        self.folder = folder
        self._files = self._mapped()

    @reading
    def reload(self) -> None:
        for shard in self.shards:
            shard.reload()
        self._files = self._mapped()

    def _mapped(self) -> list[tuple[str, int, int]]:
        """(path, inode, size) of each segment file the shards may have mapped in memory."""
        if self.folder is None:
            return []
        files = []
        for folder in shard_folders(self.folder):
            with contextlib.suppress(FileNotFoundError), os.scandir(folder) as entries:
                for entry in entries:
                    # Segment files only: not meta.json, .managed.json or tantivy's lock files.
                    if not entry.name.startswith(".") and not entry.name.endswith(".json"):
                        with contextlib.suppress(FileNotFoundError):
                            found = entry.stat()
                            files.append((entry.path, found.st_ino, found.st_size))
        return files

    def _check_mapped(self) -> None:
        """Damaged when a segment file the shards mapped was cut short in place. Tantivy reads
        its segments through memory maps: a read past the new end of a truncated file would
        kill the process (SIGBUS), so a search looks first (a stat per file, some microseconds).
        A file gone or replaced is fine: the map keeps the old one (tantivy deletes the
        segments a merge replaced)."""
        for path, inode, size in self._files:
            try:
                found = os.stat(path)
            except FileNotFoundError:
                continue
            if found.st_ino == inode and found.st_size < size:
                raise Damaged(
                    f"{os.path.basename(path)} was cut short ({found.st_size} of {size} bytes)"
                )

    def writer(self, heap: int, threads: int) -> ShardWriter:
        """A writer for the shards, with `heap` bytes and `threads` threads for indexing."""
        return ShardWriter(self.shards, self.held(), heap, threads, self.folder)

    @reading
    def held(self) -> list[int]:
        """Pages in each shard, as committed (whoever wrote last)."""
        self.reload()
        return [shard.searcher().num_docs for shard in self.shards]

    @reading
    def searcher(self) -> ShardSearcher:
        self._check_mapped()
        return ShardSearcher([shard.searcher() for shard in self.shards])


class ShardWriter:
    """An IndexWriter over every shard: pages go to shard 0 until the split, then to the shard
    of their name. Each shard's tantivy writer is opened when first needed: before the split,
    shard 0's has all the threads and memory (one tantivy writer, as an unsplit index had);
    from the split on, each shard opened gets its share. Tantivy's failures (a full disk)
    are raised as StoreError (disk.index_failure)."""

    def __init__(
        self,
        shards: list[tantivy.Index],
        held: list[int],
        heap: int,
        threads: int,
        folder: Path | None = None,
    ) -> None:
        self._shards = shards
        self._folder = folder
        self._held = held  # pages in each shard as committed when the writer was made
        self._writers: dict[int, tantivy.IndexWriter] = {}
        self._split = any(held[1:]) or held[0] >= SPLIT_FROM
        self._first = held[0]  # pages in shard 0, as committed plus those added since
        self._heap = heap
        self._threads = threads

    def _writer(self, shard: int) -> tantivy.IndexWriter:
        writer = self._writers.get(shard)
        if writer is None:
            if self._split:
                each = max(1, self._threads // len(self._shards))
                memory = max(_MIN_HEAP * each, self._heap // len(self._shards))
            else:
                each, memory = self._threads, self._heap
            with index_writes(self._folder):
                writer = self._writers[shard] = self._shards[shard].writer(memory, each)
        return writer

    def add(self, name: str, document: tantivy.Document) -> None:
        shard = shard_of(name) if self._split else 0
        writer = self._writer(shard)
        try:
            writer.add_document(document)
        except ValueError as exc:  # a thread of tantivy's died: its I/O failed
            raise index_failure(self._folder, exc) from None
        if not self._split:
            self._first += 1
            self._split = self._first >= SPLIT_FROM

    def delete(self, name: str) -> None:
        # A page may be in any shard: written before the split, or before a rebuild. A shard
        # that held nothing and has no writer yet has nothing to forget.
        for shard in range(len(self._shards)):
            if self._held[shard] or shard in self._writers:
                writer = self._writer(shard)
                try:
                    writer.delete_documents_by_term("name", name)
                except ValueError as exc:
                    raise index_failure(self._folder, exc) from None

    def commit(self) -> None:
        with index_writes(self._folder):
            for writer in self._writers.values():
                writer.commit()

    def rollback(self) -> None:
        for writer in self._writers.values():
            writer.rollback()

    def wait_merging_threads(self) -> None:
        for writer in self._writers.values():
            writer.wait_merging_threads()


class ShardSearcher:
    """A Searcher over every shard: each query runs on all of them at once, the best hits of
    each merged by score."""

    def __init__(self, searchers: list[tantivy.Searcher]) -> None:
        self._searchers = searchers

    @property
    def num_docs(self) -> int:
        return sum(s.num_docs for s in self._searchers)

    @reading
    def search(self, query: tantivy.Query, limit: int) -> list[tuple[float, Hit]]:
        """The best `limit` hits of every shard, best first (ties: shard by shard)."""

        def one(shard: int) -> list[tuple[float, Hit]]:
            found = self._searchers[shard].search(query, limit, count=False).hits
            return [(score, Hit(shard, address)) for score, address in found]

        held = [i for i, searcher in enumerate(self._searchers) if searcher.num_docs]
        if len(held) <= 1:
            return one(held[0]) if held else []
        pool = _searching_pool()
        others = [pool.submit(one, i) for i in held[1:]]
        results = [one(held[0])] + [future.result() for future in others]
        merged = heapq.merge(*results, key=lambda hit: -hit[0])
        return list(merged)[:limit]

    @reading
    def doc(self, hit: Hit) -> tantivy.Document:
        return self._searchers[hit.shard].doc(hit.address)

    @reading
    def names(self, hits: Sequence[tuple[float, Hit]]) -> list[str]:
        """The resource names of hits, in order."""
        return [self.doc(hit)["name"][0] for _, hit in hits]

    def every_name(self, batch: int) -> Iterator[list[str]]:
        """The name of every page the shards hold, in batches of at most `batch`."""
        everything = tantivy.Query.all_query()
        for searcher in self._searchers:
            # Each search with an offset walks the pages before it again: by pages of _WALK,
            # `index check` at a million pages takes 12.6 s (by 500, 88 s).
            for offset in range(0, searcher.num_docs, _WALK):
                try:
                    hits = searcher.search(everything, _WALK, count=False, offset=offset).hits
                    names = [searcher.doc(address)["name"][0] for _, address in hits]
                except ValueError as exc:  # a generator: `reading` cannot wrap it
                    raise Damaged(str(exc)) from exc
                for start in range(0, len(names), batch):
                    yield names[start : start + batch]

    @reading
    def doc_freq(self, field: str, term: str) -> int:
        return sum(s.doc_freq(field, term) for s in self._searchers)

    @reading
    def terms_with_prefix(self, field: str, prefix: str, limit: int) -> list[tuple[str, int]]:
        """Terms of `field` starting with `prefix`, with how many pages hold each (at most
        `limit` terms from each shard)."""
        counts: dict[str, int] = {}
        for searcher in self._searchers:
            for term, docs in searcher.terms_with_prefix(field, prefix, limit=limit):
                counts[term] = counts.get(term, 0) + docs
        return list(counts.items())
