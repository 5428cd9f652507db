"""Crawl state in the store: crawls, their frontiers, and names upstream does not have.

Every change a batch makes (its documents, the states of its names, the names its pages link
to, what upstream lacks) commits in one transaction with it (on SQLite, a group of batches
that arrived together shares one), so a crawl killed at any moment resumes from a consistent
frontier and never fetches a committed batch again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine, and_, bindparam, delete, func, select, update

from ...models import Document
from ..db import turns
from ..db.rows import dialect_insert
from ..schema.crawl import crawl_frontier, crawls, missing_documents

# Names per IN (...) list: well under SQLite's parameter limit.
_CHUNK = 500
QUEUED = "queued"
FAILED = "failed"
SKIPPED = "skipped"  # its page's links kept turning out missing (mirror/crawl/broken.py)

# Returns the names whose content changed. A crawl leaves their semantic vectors to
# `dk-mirror index update`, as an import does: embedding inside a crawl would cost ~2 s a batch.
WriteDocuments = Callable[[Connection, list[Document], float, str], list[str]]


@dataclass(frozen=True, slots=True)
class CrawlStart:
    """The crawl a run works on: its id, and whether it continues an unfinished pass."""

    id: int
    resumed: bool
    searched: bool


@dataclass(slots=True)
class BatchChanges:
    """What one batch changes, written in one transaction by `Crawls.commit`."""

    documents: list[Document] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # name -> final state
    # (name, found_from) of pages the batch's pages link to, all at depth `child_depth`.
    children: list[tuple[str, str]] = field(default_factory=list)
    child_depth: int = 0
    missing: list[str] = field(default_factory=list)  # upstream said NOT_FOUND just now
    found: list[str] = field(default_factory=list)  # upstream returned them: not missing


@dataclass(frozen=True, slots=True)
class Claim:
    """Names one worker may settle, and the transaction that holds them (None on SQLite).

    On PostgreSQL the names' frontier rows stay locked (FOR UPDATE) until the batch commits in
    that same transaction, so another crawler on the frontier skips them (SKIP LOCKED) instead
    of fetching them too; if the worker dies, the rollback frees them, still queued.
    """

    names: list[str]
    conn: Connection | None = None


class Crawls:
    """Reads and writes the crawl tables; writes take the store's write transaction."""

    def __init__(
        self, engine: Engine, writer: Callable[[], Connection], write_documents: WriteDocuments
    ) -> None:
        self.engine = engine
        self._writer = writer
        self._write_documents = write_documents
        dialect = engine.dialect.name
        frontier_insert = dialect_insert(dialect, crawl_frontier)
        self._add_names = frontier_insert.on_conflict_do_nothing()
        self._new_crawl = dialect_insert(dialect, crawls).on_conflict_do_nothing(
            index_elements=["key"]
        )
        missing_insert = dialect_insert(dialect, missing_documents)
        # A name missing again keeps when it was first found missing.
        self._note_missing = missing_insert.on_conflict_do_update(
            index_elements=["name"], set_={"checked_at": missing_insert.excluded.checked_at}
        )
        self._set_state = (
            update(crawl_frontier)
            .where(
                crawl_frontier.c.crawl_id == bindparam("cid"),
                crawl_frontier.c.name == bindparam("n"),
            )
            .values(state=bindparam("s"))
        )
        # Built once: SQLAlchemy then reuses its compiled form (an IN list expanded per call).
        self._forget_missing = delete(missing_documents).where(
            missing_documents.c.name.in_(bindparam("names", expanding=True))
        )

    @property
    def claims_rows(self) -> bool:
        """True if a batch must claim its frontier rows (several crawlers may share the
        frontier: PostgreSQL); False on SQLite, where one process holds the write lock."""
        return self.engine.dialect.name != "sqlite"

    def begin(
        self,
        key: str,
        spec_json: str,
        seeds: Sequence[str],
        *,
        now: float,
        max_docs: int | None,
        retry_skipped: bool = False,
    ) -> CrawlStart:
        """The crawl described by `key`: continued if unfinished, else a new pass; its failed
        names (and with `retry_skipped` its skipped ones) queued again and its seeds added (up
        to `max_docs` names in all)."""
        again = [FAILED, SKIPPED] if retry_skipped else [FAILED]
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                # Two crawlers may start the same crawl at once (PostgreSQL): the second's insert
                # waits for the first's commit and does nothing; both then read the one row.
                created = conn.execute(
                    self._new_crawl.values(
                        key=key, spec_json=spec_json, started_at=now, updated_at=now, searched=0,
                        next_seq=0,
                    )
                ).rowcount == 1  # fmt: skip
                row = conn.execute(
                    select(crawls.c.id, crawls.c.finished_at, crawls.c.searched)
                    .where(crawls.c.key == key)
                    .with_for_update()
                ).one()
                resumed = not created and row.finished_at is None
                crawl_id = row.id
                if not created and not resumed:
                    # The last pass finished: walk again (stored pages cost no request).
                    conn.execute(
                        delete(crawl_frontier).where(crawl_frontier.c.crawl_id == crawl_id)
                    )
                    conn.execute(
                        update(crawls)
                        .where(crawls.c.id == crawl_id)
                        .values(
                            started_at=now, updated_at=now, finished_at=None, searched=0, next_seq=0
                        )
                    )
                conn.execute(
                    update(crawl_frontier)
                    .where(crawl_frontier.c.crawl_id == crawl_id, crawl_frontier.c.state.in_(again))
                    .values(state=QUEUED)
                )
                self._add(conn, crawl_id, [(s, "seed") for s in seeds], 0, max_docs)
                searched = bool(row.searched) if resumed else False
        return CrawlStart(id=int(crawl_id), resumed=resumed, searched=searched)

    def add_found(
        self,
        crawl_id: int,
        names: Sequence[tuple[str, str]],
        *,
        max_docs: int | None,
        now: float,
    ) -> int:
        """Add search results at depth 0 and mark the pass's search discovery done, in one
        transaction; returns how many names were new."""
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                added = self._add(conn, crawl_id, names, 0, max_docs)
                conn.execute(
                    update(crawls).where(crawls.c.id == crawl_id).values(searched=1, updated_at=now)
                )
        return added

    def _add(
        self,
        conn: Connection,
        crawl_id: int,
        names: Sequence[tuple[str, str]],
        depth: int,
        max_docs: int | None,
    ) -> int:
        """Insert the names not yet in the frontier (first ones first, within `max_docs`)."""
        wanted: dict[str, str] = {}
        for name, found_from in names:
            wanted.setdefault(name, found_from)  # where it was first found, in order
        if not wanted:
            return 0
        # Lock the crawl's row first: its seq counter orders the frontier, and on PostgreSQL
        # two workers' batches must not take the same numbers (SQLite's writer is alone).
        next_seq = conn.execute(
            select(crawls.c.next_seq).where(crawls.c.id == crawl_id).with_for_update()
        ).scalar_one()
        known: set[str] = set()
        listed = list(wanted)
        for start in range(0, len(listed), _CHUNK):
            part = listed[start : start + _CHUNK]
            known.update(
                conn.execute(
                    select(crawl_frontier.c.name).where(
                        crawl_frontier.c.crawl_id == crawl_id, crawl_frontier.c.name.in_(part)
                    )
                ).scalars()
            )
        new = [n for n in listed if n not in known]
        if max_docs is not None and new:
            count = conn.execute(
                select(func.count()).where(crawl_frontier.c.crawl_id == crawl_id)
            ).scalar_one()
            new = new[: max(0, max_docs - count)]
        if not new:
            return 0
        conn.execute(
            self._add_names,
            [
                {
                    "crawl_id": crawl_id,
                    "name": name,
                    "depth": depth,
                    "seq": next_seq + i,
                    "state": QUEUED,
                    "found_from": wanted[name],
                }
                for i, name in enumerate(new)
            ],
        )
        conn.execute(
            update(crawls).where(crawls.c.id == crawl_id).values(next_seq=next_seq + len(new))
        )
        return len(new)

    def pending_depth(self, crawl_id: int) -> int | None:
        """The shallowest depth with queued names (None: nothing is queued)."""
        with self.engine.connect() as conn:
            depth = conn.execute(
                select(func.min(crawl_frontier.c.depth)).where(
                    crawl_frontier.c.crawl_id == crawl_id, crawl_frontier.c.state == QUEUED
                )
            ).scalar()
        return None if depth is None else int(depth)

    def queued(
        self, crawl_id: int, depth: int, after_seq: int, limit: int
    ) -> list[tuple[int, str, str]]:
        """(seq, name, found_from) of up to `limit` queued names at `depth` after `after_seq`,
        in order."""
        query = (
            select(crawl_frontier.c.seq, crawl_frontier.c.name, crawl_frontier.c.found_from)
            .where(
                and_(
                    crawl_frontier.c.crawl_id == crawl_id,
                    crawl_frontier.c.state == QUEUED,
                    crawl_frontier.c.depth == depth,
                    crawl_frontier.c.seq > after_seq,
                )
            )
            .order_by(crawl_frontier.c.seq)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [(int(seq), str(name), str(src)) for seq, name, src in conn.execute(query)]

    def skip(self, crawl_id: int, names: Sequence[str]) -> int:
        """Mark the still queued of `names` skipped (their page's links kept turning out
        missing); returns how many."""
        skipped = 0
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                skipped = 0
                ordered = sorted(set(names))
                for start in range(0, len(ordered), _CHUNK):
                    result = conn.execute(
                        update(crawl_frontier)
                        .where(
                            crawl_frontier.c.crawl_id == crawl_id,
                            crawl_frontier.c.state == QUEUED,
                            crawl_frontier.c.name.in_(ordered[start : start + _CHUNK]),
                        )
                        .values(state=SKIPPED)
                    )
                    skipped += int(result.rowcount or 0)
        return skipped

    def skipped_from(self, crawl_id: int) -> list[str]:
        """The pages whose links the crawl skipped, by name."""
        query = (
            select(crawl_frontier.c.found_from)
            .where(crawl_frontier.c.crawl_id == crawl_id, crawl_frontier.c.state == SKIPPED)
            .distinct()
            .order_by(crawl_frontier.c.found_from)
        )
        with self.engine.connect() as conn:
            return [str(n) for n in conn.execute(query).scalars()]

    @contextmanager
    def claim(self, crawl_id: int, names: Sequence[str]) -> Iterator[Claim]:
        """Claim `names` for one batch: those still queued and not claimed by another crawler.

        PostgreSQL lets several crawlers share a frontier: the rows are locked with FOR UPDATE
        SKIP LOCKED in a transaction held through the fetch, and `commit(..., claim=)` writes
        the batch in it. On SQLite (`claims_rows` False) every name is yielded with no
        transaction: one process writes at a time, and its walk group-commits instead.
        """
        if self.engine.dialect.name == "sqlite":
            yield Claim(list(names))
            return
        query = (
            select(crawl_frontier.c.name)
            .where(
                crawl_frontier.c.crawl_id == crawl_id,
                crawl_frontier.c.name.in_(list(names)),
                crawl_frontier.c.state == QUEUED,
            )
            .with_for_update(skip_locked=True)
        )
        with self._writer() as conn, conn.begin():
            claimed = set(conn.execute(query).scalars())
            yield Claim([n for n in names if n in claimed], conn)

    def commit(
        self,
        crawl_id: int,
        group: Sequence[BatchChanges],
        *,
        fetched_at: float,
        upstream: str,
        max_docs: int | None,
        claim: Claim | None = None,
    ) -> int:
        """Write a group of batches in ONE transaction (documents, states, new names, missing
        names): all or nothing, exactly as if each batch were committed in turn, in order.
        Returns how many names the frontier gained. With a `claim` holding a transaction, the
        group is written in it (and commits when the claim ends)."""
        added = 0
        if claim is not None and claim.conn is not None:
            # In a savepoint: a write PostgreSQL rolls back for colliding with another writer
            # goes back to it and runs again, and the claim on the frontier rows holds.
            for attempt in turns.retrying():
                with attempt, claim.conn.begin_nested():
                    added = self._write_group(
                        claim.conn, crawl_id, group, fetched_at, max_docs, upstream
                    )
            return added
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                added = self._write_group(conn, crawl_id, group, fetched_at, max_docs, upstream)
        return added

    @contextmanager
    def writer(self) -> Iterator[GroupWriter]:
        """A writer of groups on one connection (a crawl's writer thread), so that only it
        keeps the statements of every group size a crawl writes: with a pooled connection
        per group, every connection in the pool kept its own copies (a 50,000-page crawl's
        peak RSS grew ~30 MB more than batch-by-batch commits)."""
        with self._writer() as conn:
            yield GroupWriter(self, conn)

    def _write_group(
        self,
        conn: Connection,
        crawl_id: int,
        group: Sequence[BatchChanges],
        fetched_at: float,
        max_docs: int | None,
        upstream: str,
    ) -> int:
        """The group's writes on `conn`, in its transaction; how many names were added."""
        documents = [doc for changes in group for doc in changes.documents]
        states = [(n, s) for changes in group for n, s in changes.states.items()]
        # In name order, as every writer of these tables: two never wait for each other's rows.
        missing = sorted({n for changes in group for n in changes.missing})
        found = sorted({n for changes in group for n in changes.found})
        added = 0
        if documents:
            self._write_documents(conn, documents, fetched_at, upstream)
        if states:
            conn.execute(self._set_state, [{"cid": crawl_id, "n": n, "s": s} for n, s in states])
        # Children in batch order, so the frontier's order (and which page a name was first
        # found from) is the one batch-by-batch commits would give.
        for depth, children in _children_by_depth(group):
            added += self._add(conn, crawl_id, children, depth, max_docs)
        if missing:
            conn.execute(
                self._note_missing,
                [
                    {"name": n, "first_missing_at": fetched_at, "checked_at": fetched_at}
                    for n in missing
                ],
            )
        for start in range(0, len(found), _CHUNK):
            conn.execute(self._forget_missing, {"names": found[start : start + _CHUNK]})
        conn.execute(update(crawls).where(crawls.c.id == crawl_id).values(updated_at=fetched_at))
        return added

    def requeue_failed(self, crawl_id: int, depth: int) -> int:
        """Queue the failed names at `depth` again; returns how many."""
        for attempt in turns.retrying():
            with attempt, self._writer() as conn, conn.begin():
                result = conn.execute(
                    update(crawl_frontier)
                    .where(
                        crawl_frontier.c.crawl_id == crawl_id,
                        crawl_frontier.c.state == FAILED,
                        crawl_frontier.c.depth == depth,
                    )
                    .values(state=QUEUED)
                )
        return int(result.rowcount or 0)

    def counts(self, crawl_id: int) -> dict[str, int]:
        """How many names are in each state."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(crawl_frontier.c.state, func.count())
                .where(crawl_frontier.c.crawl_id == crawl_id)
                .group_by(crawl_frontier.c.state)
            )
            return {str(state): int(n) for state, n in rows}

    def names_in(self, crawl_id: int, states: Iterable[str]) -> list[str]:
        """The names in any of `states`, in frontier order."""
        query = (
            select(crawl_frontier.c.name)
            .where(crawl_frontier.c.crawl_id == crawl_id, crawl_frontier.c.state.in_(list(states)))
            .order_by(crawl_frontier.c.depth, crawl_frontier.c.seq)
        )
        with self.engine.connect() as conn:
            return [str(n) for n in conn.execute(query).scalars()]

    def pages(self, crawl_id: int) -> list[tuple[str, str, str]]:
        """(name, state, found_from) of every name in the frontier, in frontier order."""
        c = crawl_frontier.c
        query = (
            select(c.name, c.state, c.found_from)
            .where(c.crawl_id == crawl_id)
            .order_by(c.depth, c.seq)
        )
        with self.engine.connect() as conn:
            return [(str(n), str(s), str(f)) for n, s, f in conn.execute(query)]

    def finish(self, crawl_id: int, *, now: float) -> bool:
        """Mark the pass finished if nothing is queued or failed; True if it was."""
        return turns.retrying()(self._finish, crawl_id, now)

    def _finish(self, crawl_id: int, now: float) -> bool:
        with self._writer() as conn, conn.begin():
            open_names = conn.execute(
                select(func.count()).where(
                    crawl_frontier.c.crawl_id == crawl_id,
                    crawl_frontier.c.state.in_([QUEUED, FAILED]),
                )
            ).scalar_one()
            if open_names:
                return False
            conn.execute(
                update(crawls)
                .where(crawls.c.id == crawl_id)
                .values(finished_at=now, updated_at=now)
            )
        return True

    def known_missing(self, names: Sequence[str], *, checked_since: float | None) -> set[str]:
        """Which of `names` upstream was found to lack (at or after `checked_since`, if given)."""
        if not names:
            return set()
        query = select(missing_documents.c.name).where(missing_documents.c.name.in_(list(names)))
        if checked_since is not None:
            query = query.where(missing_documents.c.checked_at >= checked_since)
        with self.engine.connect() as conn:
            return {str(n) for n in conn.execute(query).scalars()}


class GroupWriter:
    """Commits groups of batches, each in one transaction, on one connection."""

    def __init__(self, crawls: Crawls, conn: Connection) -> None:
        self._crawls = crawls
        self._conn = conn

    def commit(
        self,
        crawl_id: int,
        group: Sequence[BatchChanges],
        *,
        fetched_at: float,
        upstream: str,
        max_docs: int | None,
    ) -> int:
        """`Crawls.commit` on this writer's connection; how many names the frontier gained."""
        with self._conn.begin():
            return self._crawls._write_group(
                self._conn, crawl_id, group, fetched_at, max_docs, upstream
            )


def _children_by_depth(group: Sequence[BatchChanges]) -> list[tuple[int, list[tuple[str, str]]]]:
    """The group's children as runs of one depth each, in batch order."""
    runs: list[tuple[int, list[tuple[str, str]]]] = []
    for changes in group:
        if not changes.children:
            continue
        if runs and runs[-1][0] == changes.child_depth:
            runs[-1][1].extend(changes.children)
        else:
            runs.append((changes.child_depth, list(changes.children)))
    return runs
