"""Scale: kept counts stay exact on every write path, `ls` streams, big work runs in bounded
memory (tracemalloc on generated files, so a regression to "hold everything" fails)."""

from __future__ import annotations

import gzip
import json
import sqlite3
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mirror.cli import render
from mirror.cli.main import cli
from mirror.config import Settings
from mirror.models import Document, Stats, Summary
from mirror.service import Mirror
from mirror.snapshots import format as snapshot
from mirror.snapshots.read import verify
from mirror.store.store import Store

CORPUS = Path(__file__).parent / "data" / "corpus" / "tensorflow.org.jsonl.gz"


def doc(i: int, host: str = "scale.example", content: str | None = None) -> Document:
    """A document of about 1.6 KB; `content` None keeps the default text."""
    return Document(
        name=f"documents/{host}/p{i:06}",
        uri=f"https://{host}/p{i:06}",
        content=content if content is not None else f"# Page {i}\n\n" + f"About page {i}. " * 90,
        title=f"Page {i}",
        description="A page",
        data_source=host,
        update_time="2026-01-01T00:00:00Z",
    ).with_derived_fields()


def counted(db: Path) -> Stats:
    """The stats as `status` computed them before the counts were kept: a scan of documents."""
    with sqlite3.connect(db) as conn:
        total, with_content, size, oldest, newest = conn.execute(
            "SELECT count(*), count(content), coalesce(sum(content_length_bytes), 0), "
            "min(fetched_at), max(fetched_at) FROM documents"
        ).fetchone()
        by_source = conn.execute(
            "SELECT data_source, count(content) FROM documents GROUP BY data_source "
            "HAVING count(content) > 0"
        ).fetchall()
    return Stats(total, with_content, size, oldest, newest, {str(s): n for s, n in by_source})


def test_status_counts_stay_exact_on_every_write_path(tmp_path: Path) -> None:
    db = tmp_path / "store.sqlite3"
    url = f"sqlite:///{db}"
    clock = iter(float(t) for t in range(100, 200))
    mirror = Mirror(Settings(db_url=url, offline=True), clock=lambda: next(clock))
    store = Store.open(url)

    def check() -> None:
        kept = mirror.stats()
        assert kept == counted(db)
        assert mirror.health().stats == kept  # `status`, `doctor` and the web pages

    try:
        check()  # empty
        mirror.import_file(CORPUS)  # import
        check()
        store.put([doc(i) for i in range(5)], fetched_at=50.0, upstream="t")  # put
        store.put([doc(1, content="# Longer\n\n" + "text " * 50)], fetched_at=60.0, upstream="t")
        check()
        # Metadata noted from search results: counted as documents, not as content.
        store.recordings.note_metadata(
            [doc(9, "meta.example").basic(), doc(2).basic()], at=70.0, upstream="t"
        )
        check()
        full = tmp_path / "full.gz"
        mirror.export_snapshot(full, prefix="documents/scale.example/")
        store.put([doc(i) for i in range(5, 8)], fetched_at=80.0, upstream="t")
        delta = tmp_path / "delta.gz"
        store.apply_stream(["documents/scale.example/p000000"], fetched_at=0, upstream="t")
        mirror.export_snapshot(delta, prefix="documents/scale.example/", since=full)
        check()  # delete
        other = Mirror(Settings(db_url=f"sqlite:///{tmp_path / 'other.sqlite3'}", offline=True))
        try:
            other.import_snapshot(full)  # snapshot import (full), then a delta with tombstones
            assert other.import_snapshot(delta).removed == 1
            assert other.stats() == counted(tmp_path / "other.sqlite3")
            assert other.stats().by_data_source == {"scale.example": 7}
        finally:
            other.close()
        store.apply_stream([d.name for d in store.iter_documents()], fetched_at=0, upstream="t")
        check()
        assert mirror.stats().by_data_source == {}
    finally:
        store.close()
        mirror.close()


def test_ls_prints_its_table_before_reading_the_whole_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pulled = 0

    def listing(self: Mirror, prefix: str | None, limit: int | None) -> Iterator[Summary]:
        nonlocal pulled
        for i in range(10_000):
            if i == render.TABLE_BLOCK + 5:
                raise RuntimeError("read past the first rows")
            pulled += 1
            yield Summary(f"documents/a.example/p{i}", f"Page {i}", "a.example", None, 10, True, 0)

    monkeypatch.setattr(Mirror, "list_documents", listing)
    db = tmp_path / "s.sqlite3"
    Store.open(f"sqlite:///{db}").close()
    result = CliRunner().invoke(cli, ["ls", "--db", str(db)])
    # The rows read so far were printed before the store was read to its end (`ls | head`).
    lines = result.stdout.splitlines()
    assert len(lines) >= render.TABLE_BLOCK
    assert lines[0].split() == ["documents/a.example/p0", "10", "B", "Page", "0"]
    assert isinstance(result.exception, RuntimeError)


def test_streamed_table_matches_the_whole_table_while_columns_fit() -> None:
    rows = [(f"n{i}", f"{i} B", f"title {i}") for i in range(250)]
    assert list(render.table_lines(rows, block=1000)) == render.table(rows).splitlines()
    # Columns only widen from block to block, so every line stays aligned with the earlier.
    widened = list(render.table_lines([("a", "b", "c"), ("longer", "b", "c")], block=1))
    assert widened == ["a  b  c", "longer  b  c"]


# --- bounded memory -----------------------------------------------------------------------------

# Documents in the generated store and files: enough that holding every document, or every
# document's hashes, costs several times the bound below; small enough to build in seconds.
MANY = 6_000
# Python memory (tracemalloc peak) any of the streamed commands may use, whatever MANY is
# (they measured 2-3.5 MB: a batch of rows, a block of entries, a few read buffers).
BOUND = 5 << 20
# `import` prepares the next batches in a thread while the current one is written (a pipeline
# two batches deep, measured 5 MB): a bounded stream still, far below holding the file.
IMPORT_BOUND = 6 << 20


def peak(func: Callable[[], Any]) -> int:
    """Peak Python memory (bytes) while `func` runs."""
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A store of MANY documents, its snapshot, and the same documents as an import file."""
    folder = tmp_path_factory.mktemp("big")
    db = folder / "store.sqlite3"
    store = Store.open(f"sqlite:///{db}")
    try:
        store.put_stream((doc(i) for i in range(MANY)), fetched_at=1.0, upstream="t")
    finally:
        store.close()
    records = folder / "docs.jsonl.gz"
    with gzip.open(records, "wt", encoding="utf-8") as out:
        for i in range(MANY):
            out.write(json.dumps(doc(i).to_api()) + "\n")
    snap = folder / "snap.gz"
    with Mirror(Settings(db_url=f"sqlite:///{db}", offline=True)) as mirror:
        mirror.export_snapshot(snap)
    return {"db": db, "records": records, "snapshot": snap}


@pytest.mark.slow
def test_holding_everything_would_break_the_bound(big: dict[str, Path], tmp_path: Path) -> None:
    # The bound means something: the documents alone take more than twice as much, and so does
    # verifying the same documents in format v1, whose manifest line lists every hash.
    def hold() -> None:
        docs = [doc(i) for i in range(MANY)]
        assert len(docs) == MANY

    assert peak(hold) > 2 * BOUND
    store = Store.open(f"sqlite:///{big['db']}")
    try:
        old = tmp_path / "v1.gz"
        snapshot.write_full(old, store.iter_documents(), {}, version=1)
    finally:
        store.close()
    assert peak(lambda: verify(old)) > BOUND


@pytest.mark.slow
def test_snapshot_export_and_verify_run_in_bounded_memory(
    big: dict[str, Path], tmp_path: Path
) -> None:
    with Mirror(Settings(db_url=f"sqlite:///{big['db']}", offline=True)) as mirror:
        mirror.stats()  # opened before measuring
        # Run once before measuring: the modules export and verify import on first use
        # (and their caches) are ~2 MB of tracemalloc's peak in a process that has not
        # loaded them yet, whatever MANY is; the bound is about what grows with the store.
        mirror.export_snapshot(tmp_path / "warm.gz")
        verify(tmp_path / "warm.gz")
        out = tmp_path / "again.gz"
        assert peak(lambda: mirror.export_snapshot(out)) < BOUND
    assert out.read_bytes() == big["snapshot"].read_bytes()
    report: list[Any] = []
    assert peak(lambda: report.append(verify(big["snapshot"]))) < BOUND
    assert report[0].ok and report[0].manifest.count == MANY


@pytest.mark.slow
def test_snapshot_import_runs_in_bounded_memory(big: dict[str, Path], tmp_path: Path) -> None:
    with Mirror(Settings(db_url=f"sqlite:///{tmp_path / 'new.sqlite3'}", offline=True)) as mirror:
        mirror.stats()
        assert peak(lambda: mirror.import_snapshot(big["snapshot"])) < BOUND
        assert mirror.stats().with_content == MANY


@pytest.mark.slow
def test_import_runs_in_bounded_memory(big: dict[str, Path], tmp_path: Path) -> None:
    with Mirror(Settings(db_url=f"sqlite:///{tmp_path / 'new.sqlite3'}", offline=True)) as mirror:
        mirror.stats()
        assert peak(lambda: mirror.import_file(big["records"])) < IMPORT_BOUND
        assert mirror.stats().with_content == MANY


def test_a_snapshot_that_fails_while_streaming_in_imports_nothing(
    big: dict[str, Path], tmp_path: Path
) -> None:
    # All or nothing without holding the file: the write pass verifies again and rolls back.
    from mirror.snapshots import read as snapshot_read

    real = snapshot_read.checked
    data = gzip.decompress(big["snapshot"].read_bytes())
    bad = tmp_path / "bad.gz"
    bad.write_bytes(gzip.compress(data.replace(b"About page 4000.", b"About page 4OOO.", 1), 9))

    def checked_then_swapped(path: Any, **kw: Any) -> Any:
        manifest = real(big["snapshot"], **kw)  # the good file passes the first pass ...
        return manifest  # ... and `path` (the damaged one) is what the write pass reads

    with Mirror(Settings(db_url=f"sqlite:///{tmp_path / 'new.sqlite3'}", offline=True)) as mirror:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(snapshot_read, "checked", checked_then_swapped)
            with pytest.raises(Exception, match="failed verification"):
                mirror.import_snapshot(bad)
        assert mirror.stats().documents == 0


def test_export_md_streams_the_same_index_as_the_whole_list(tmp_path: Path) -> None:
    from mirror.snapshots import mdpaths

    # Name order and host order differ here ("a.example.org/" sorts before "a.example/").
    docs = [doc(i, host) for host in ("a.example", "a.example.org", "b.example") for i in range(3)]
    docs.append(doc(7, "a.example", content="# Untitled\n"))
    url = f"sqlite:///{tmp_path / 's.sqlite3'}"
    store = Store.open(url)
    try:
        store.put(docs, fetched_at=1.0, upstream="t")
        store.recordings.note_metadata([doc(9, "a.example").basic()], at=2.0, upstream="t")
    finally:
        store.close()
    with Mirror(Settings(db_url=url, offline=True)) as mirror:
        for prefix, chosen in (
            (None, docs),
            ("documents/a.example/", [d for d in docs if d.data_source == "a.example"]),
            ("documents/a.ex", [d for d in docs if d.name.startswith("documents/a.ex")]),
        ):
            out = tmp_path / f"md-{len(chosen)}"
            assert mirror.export_markdown(out, prefix=prefix) == len(chosen)
            whole = mdpaths.index_markdown(
                (d.name, d.title, mdpaths.relative_path(d.name)) for d in chosen
            )
            assert (out / mdpaths.INDEX).read_text(encoding="utf-8") == whole
