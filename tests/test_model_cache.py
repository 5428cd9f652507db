"""The prepared model's cache (mirror/semantic/cache.py): written by the first load, loaded
when whole, rewritten when not, never needed, and the vectors the same whichever way the
model loads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from mirror.config import ENV_MODEL_CACHE
from mirror.semantic import cache, model

from .model_marks import OWN_MODEL_CACHE

pytestmark = OWN_MODEL_CACHE
TEXTS = [
    "how do I keep a service worker alive while waiting",
    "tf.keras.layers.Dense",
    "Service workers と拡張機能",
    "",
]


def _loaded(*, quick: bool = False) -> tuple[model.Embedder, np.ndarray]:
    embedder = model.Embedder(quick_start=quick)
    return embedder, embedder.embed(TEXTS)


def _where() -> Path:
    import onnxruntime

    embedder = model.Embedder()
    return cache.folder(
        embedder._original(), embedder._version(), onnxruntime.__version__, cache.root()
    )


def _runtime() -> str:
    import onnxruntime

    return str(onnxruntime.__version__)


@pytest.mark.parametrize("quick", [False, True], ids=["a server", "a cold search"])
def test_the_first_load_prepares_the_cache_and_the_next_loads_it_with_the_same_vectors(
    quick: bool,
) -> None:
    assert not _where().exists()  # $DK_MIRROR_HOME is this test's own: no cache yet
    first, vectors = _loaded(quick=quick)
    # Written before the first vector: a cold search too, since the page vectors it is
    # compared with came from the prepared graph.
    assert first.cached and (_where() / cache.MANIFEST).is_file()
    again, same = _loaded()
    assert again.cached
    assert abs(same - vectors).max() < 1e-5
    quick_again, fast = _loaded(quick=True)  # the cached weights as they are, not repacked
    options = quick_again._session.get_session_options()
    assert options.get_session_config_entry("session.disable_prepacking") == "1"
    assert abs(fast - vectors).max() < 1e-5
    assert not list(_where().parent.glob(".tmp-*"))  # no scratch folder left behind


@pytest.mark.parametrize(
    "damage",
    [
        "garbage graph",
        pytest.param("truncated weights", marks=pytest.mark.slow),
        pytest.param("no manifest", marks=pytest.mark.slow),
    ],
)
def test_a_damaged_cache_is_passed_over_and_rewritten(damage: str) -> None:
    _, original = _loaded()  # writes the cache
    where = _where()
    if damage == "truncated weights":
        with (where / cache.WEIGHTS).open("r+b") as weights:
            weights.truncate(1000)
    elif damage == "garbage graph":  # same size, so only loading it can tell
        graph = where / cache.GRAPH
        size = graph.stat().st_size
        graph.write_bytes((b"\x00not a model" * (size // 12 + 1))[:size])
    else:
        (where / cache.MANIFEST).unlink()  # a writer that died before its last step
    embedder, vectors = _loaded()  # passed over, written again, loaded
    assert embedder.cached and abs(vectors - original).max() < 1e-6
    assert cache.find(embedder._original(), embedder._version(), _runtime(), cache.root())


def test_an_unwritable_cache_folder_costs_nothing_but_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, cached = _loaded()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache folder would go")
    monkeypatch.setenv("DK_MIRROR_HOME", str(blocked))
    embedder, vectors = _loaded()  # prepared in a private folder, the same arithmetic
    assert not embedder.cached and abs(vectors - cached).max() < 1e-6


@pytest.mark.slow
def test_writers_at_once_leave_one_whole_cache() -> None:
    import onnxruntime

    embedder = model.Embedder()
    original, version = embedder._original(), embedder._version()
    found: list[Path | None] = []
    writers = [
        threading.Thread(
            target=lambda: found.append(cache.write(original, version, onnxruntime, cache.root()))
        )
        for _ in range(2)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert found == [_where() / cache.GRAPH] * 2
    assert cache.find(original, version, _runtime(), cache.root()) == _where() / cache.GRAPH
    assert [p.name for p in _where().parent.iterdir()] == [_where().name]


def test_the_cache_goes_where_dk_mirror_model_cache_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "models-elsewhere"
    monkeypatch.setenv(ENV_MODEL_CACHE, str(elsewhere))
    embedder, _ = _loaded()
    assert embedder.cached and _where().parent == elsewhere
    assert (_where() / cache.MANIFEST).is_file()
