"""The cold-start path: the sqlite3 Reader gives what the full Store gives, and the read
commands import no heavy library (timings live in bench/bench_cold_get.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import click
import pytest

from mirror.cli.main import LAZY, cli
from mirror.config import Settings
from mirror.models import Answer, Document, SearchPage
from mirror.policy import Mode
from mirror.records import read_sample
from mirror.search import filters
from mirror.service import Mirror
from mirror.store.db import sql
from mirror.store.reader import Reader
from mirror.store.schema.tables import documents
from mirror.store.store import Store

ROOT = Path(__file__).resolve().parents[1]
CHROME = "developer.chrome.com"
NAME = "documents/www.tensorflow.org/hub/caching"
QUERIES = ["service worker", "manifest v3 migration", "keras", "tf.function", "zzzznothing", "a"]
HEAVY = ("sqlalchemy", "alembic", "httpx", "httpcore", "tenacity", "mcp", "starlette", "uvicorn")


@pytest.fixture
def sample_url(tmp_path: Path) -> Iterator[str]:
    """A store holding the sample, a metadata-only row, a recorded page and a recorded answer."""
    url = f"sqlite:///{tmp_path / 'store.sqlite3'}"
    store = Store.open(url)
    docs = list(read_sample())
    store.put(docs, fetched_at=1000.0, upstream="sample")
    store.recordings.note_metadata(
        [Document(name=f"documents/{CHROME}/only-metadata", title="Meta")],
        at=1001.0,
        upstream="test",
    )
    page = SearchPage.from_api({"results": [{"parent": NAME, "id": "c0", "content": "x"}]})
    store.recordings.save_page("k1", {"query": "q", "page_size": 5}, page, at=5.0, upstream="u")
    answer = Answer.from_api({"answerText": "yes"})
    store.recordings.save_answer("a1", {"query": "q"}, answer, {NAME: "ab"}, at=6.0, upstream="u")
    store.close()
    yield url


@pytest.fixture
def both(sample_url: str) -> Iterator[tuple[Store, Reader]]:
    """The full Store and the Reader on the same file."""
    store = Store.open(sample_url)
    reader = Reader.open(sample_url)
    assert reader is not None
    yield store, reader
    reader.close()
    store.close()


def test_the_sql_lists_every_column_in_the_tables_order() -> None:
    assert tuple(c.name for c in documents.columns) == sql.DOCUMENT_COLUMNS


def test_reader_and_store_read_the_same_documents(both: tuple[Store, Reader]) -> None:
    store, reader = both
    names = [s.name for s in store.list_documents()]
    assert len(names) > 20  # the batched path too
    for wanted in ([NAME], names[:20], names, [*names[:3], "documents/nowhere/x"], []):
        assert reader.get_many(wanted) == store.get_many(wanted)
    for prefix, limit in [(None, None), (f"documents/{CHROME}/", None), (None, 3), ("d", 2)]:
        assert list(reader.list_documents(prefix, limit)) == list(
            store.list_documents(prefix, limit)
        )
    assert reader.stats() == store.stats()
    assert reader.facts(integrity=True) == store.facts(integrity=True)
    assert reader.url == store.url and reader.revision() == store.revision()


def test_reader_and_store_find_the_same_hits(both: tuple[Store, Reader]) -> None:
    store, reader = both
    for query in QUERIES:
        for limit, offset in [(5, 0), (3, 2), (50, 0)]:
            got = reader.search_local(query, limit=limit, offset=offset)
            assert got == store.search_local(query, limit=limit, offset=offset), query
    # A filter is SQL only the Store builds: the Reader hands it over, same answer.
    where = filters.parse(f'data_source = "{CHROME}"')
    assert reader.search_local("model", where=where) == store.search_local("model", where=where)
    for key in ("k1", "nope"):
        assert reader.recordings.page(key) == store.recordings.page(key)
    for key in ("a1", "nope"):
        assert reader.recordings.answer(key) == store.recordings.answer(key)


def test_mirror_results_are_identical_on_either_path(sample_url: str) -> None:
    settings = Settings(db_url=sample_url, offline=True)
    offline = Mode(offline=True)
    with Mirror(settings, reader=True) as fast, Mirror(settings) as full:
        assert type(fast._ctx().store) is Reader and type(full._ctx().store) is Store
        a, b = fast.get_documents([NAME]), full.get_documents([NAME])
        assert a.to_api() == b.to_api() and a.served == b.served
        for query in QUERIES:
            x = fast.search_documents(query, mode=offline)
            y = full.search_documents(query, mode=offline)
            assert x.to_json() == y.to_json()
        assert list(fast.list_documents("developer.chrome.com/docs")) == list(
            full.list_documents("developer.chrome.com/docs")
        )
        assert fast.health() == full.health()


def test_a_server_gets_the_full_store_even_when_offline(sample_url: str) -> None:
    with Mirror(Settings(db_url=sample_url, offline=True), reader=True) as mirror:
        assert type(mirror._ctx().store) is Reader
        mirror.prepare(online=False)  # what `dk-mirror --offline serve` does before serving
        assert type(mirror._ctx().store) is Store


def test_a_write_through_the_reader_goes_to_the_full_store(sample_url: str) -> None:
    with Mirror(Settings(db_url=sample_url, offline=True), reader=True) as mirror:
        assert mirror.import_sample().imported > 0  # `import --sample --offline` still writes
        assert mirror.stats().documents > 0


def test_the_reader_opens_only_a_current_sqlite_store(tmp_path: Path) -> None:
    missing = tmp_path / "missing" / "x.sqlite3"
    assert Reader.open(f"sqlite:///{missing}") is None
    assert not missing.parent.exists()  # opening to read created nothing
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database at all" * 100)
    assert Reader.open(f"sqlite:///{junk}") is None
    blank = tmp_path / "blank.sqlite3"
    sqlite3.connect(blank).close()
    assert Reader.open(f"sqlite:///{blank}") is None
    old = tmp_path / "old.sqlite3"
    Store.open(f"sqlite:///{old}").close()
    with sqlite3.connect(old) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '0002'")
    assert Reader.open(f"sqlite:///{old}") is None  # the Store migrates it instead
    assert Reader.open(f"sqlite:///{old}?mode=ro") is None
    assert Reader.open("sqlite://") is None
    assert Reader.open("postgresql://u@localhost/db") is None


def test_lazy_commands_list_the_short_help_they_have() -> None:
    ctx = click.Context(cli)
    for name, lazy in LAZY.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        listed = click.Command(name, help=lazy.summary).get_short_help_str(10_000)
        assert listed == command.get_short_help_str(10_000), f"update LAZY[{name!r}]"


PROBE = (
    "import sys, runpy\n"
    "sys.argv = ['dk-mirror', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('mirror', run_name='__main__')\nexcept SystemExit:\n    pass\n"
    f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}), file=sys.stderr)"
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["get", "--offline", NAME],
        ["--offline", "get", "--json", NAME],
        ["search", "--offline", "service worker"],
        ["ls", "--limit", "2"],
        ["status"],
        ["--help"],
        ["get", "--help"],
    ],
)
def test_read_commands_import_no_heavy_library(sample_url: str, argv: list[str]) -> None:
    env = {**os.environ, "DK_MIRROR_DB": sample_url, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.strip(), run.stderr  # the command did its work
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr


@pytest.mark.slow
def test_a_store_the_reader_cannot_open_takes_the_full_path(tmp_path: Path) -> None:
    # The probe above would pass trivially if the Reader never stepped aside: a store that
    # is not there yet takes the normal path, which creates and migrates it.
    url = f"sqlite:///{tmp_path / 'new' / 'store.sqlite3'}"
    env = {**os.environ, "DK_MIRROR_DB": url, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, "--offline", "import", "--sample"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (tmp_path / "new" / "store.sqlite3").is_file(), run.stderr
    assert "'alembic', 'sqlalchemy'" in run.stderr.strip().splitlines()[-1], run.stderr


def _embedded(url: str) -> None:
    """Vectors for every document of the store at `url`, by the default (static) model."""
    from mirror.semantic import model
    from mirror.service import semantic

    store = Store.open(url)
    try:
        assert semantic.build(store, model.status()) > 0
    finally:
        store.close()


def test_reader_and_store_read_the_same_vectors(sample_url: str) -> None:
    from mirror.semantic import model

    _embedded(sample_url)
    key = model.status().key
    store = Store.open(sample_url)
    reader = Reader.open(sample_url)
    assert reader is not None
    try:
        # A changed document's vector is stale: neither side may return it.
        first = next(iter(store.get_many([NAME]).values())).document
        store.put(
            [replace(first, content=f"{first.content}\n\nchanged")], fetched_at=2.0, upstream="t"
        )
        full, cold = store.vector_rows(key), reader.vector_rows(key)
        assert full == cold and cold[0] is not None
        assert NAME not in cold[1] and len(cold[1]) == len(cold[2]) == len(cold[3]) > 10
        assert reader.vector_rows("another model")[1:] == ([], [], [])
    finally:
        reader.close()
        store.close()


@pytest.mark.slow
def test_a_hybrid_search_imports_no_heavy_library(sample_url: str) -> None:
    """With vectors on, the cold search reads them on its own connection (no SQLAlchemy)."""
    _embedded(sample_url)
    env = {**os.environ, "DK_MIRROR_DB": sample_url, "PYTHONPATH": str(ROOT)}
    argv = ["search", "--offline", "why does a page wait before it reacts to a tap"]
    run = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.strip(), run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The sample with every page embedded (built once for the module)."""
    from mirror.semantic import model

    if not model.status().available:
        pytest.skip("the semantic extra is not installed")
    url = f"sqlite:///{tmp_path_factory.mktemp('embedded') / 'store.sqlite3'}"
    store = Store.open(url)
    store.put(list(read_sample()), fetched_at=1000.0, upstream="sample")
    store.close()
    _embedded(url)
    return url


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["get", "--offline", NAME],
        ["ls", "--limit", "2"],
        ["status"],
        ["--help"],
        ["search", "--help"],
        ["search", "--offline", "chrome.storage.local.get"],  # an API name: ranked lexically
        ["search", "--offline", "why does a page wait before it reacts to a tap"],
    ],
)
def test_only_a_search_that_ranks_with_vectors_loads_the_model(
    embedded_url: str, argv: list[str]
) -> None:
    """On a store with vectors, the command's own process never loads the model (onnxruntime,
    ~0.3 s of a cold start): a search that ranks with them has it loaded by a forked helper
    (tests/test_forked_dense.py checks it ranks as one process does), and no other command
    loads it at all."""
    # The tier as a user has it out of the box: the suite's switch (DK_MIRROR_SEMANTIC=off) unset.
    env = {k: v for k, v in os.environ.items() if k != "DK_MIRROR_SEMANTIC"}
    env.update(DK_MIRROR_DB=embedded_url, PYTHONPATH=str(ROOT))
    probe = PROBE.replace(repr(set(HEAVY)), repr({"onnxruntime", "tokenizers"}))
    run = subprocess.run(
        [sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.strip(), run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    loaded = run.stderr.strip().splitlines()[-1]
    assert loaded == "[]", run.stderr


@pytest.mark.slow
def test_a_search_with_the_tier_turned_off_never_loads_the_model(embedded_url: str) -> None:
    """DK_MIRROR_SEMANTIC=off on a store with vectors: a question is ranked by words, and the
    command's warm-up starts no model load either."""
    env = {**os.environ, "DK_MIRROR_DB": embedded_url, "PYTHONPATH": str(ROOT)}
    env["DK_MIRROR_SEMANTIC"] = "off"
    probe = PROBE.replace(repr(set(HEAVY)), repr({"onnxruntime", "tokenizers"}))
    argv = ["search", "--offline", "why does a page wait before it reacts to a tap"]
    run = subprocess.run(
        [sys.executable, "-c", probe, *argv], env=env, capture_output=True, text=True, timeout=60
    )
    assert run.stdout.strip() and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.strip().splitlines()[-1] == "[]", run.stderr
