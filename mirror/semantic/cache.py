"""The embedding model as this tier runs it, kept once per model and onnxruntime version in
the user's cache folder, so a process loads it in tens of milliseconds.

The graph is prepared from the packaged one first (prepare.py: weights folded, no-op NaN
guards dropped, matrix products quantised to int8: about a second and a half) and then
optimised by onnxruntime; saved after those steps (model.onnx, the graph, and model.data,
its weights, beside it), it loads with the optimisations off and the weights memory-mapped
from the page cache. Every session of the tier loads this graph, so a page's vector and a
query's are made by the same arithmetic (tests/test_model_cache.py).

Never required: a cache that is missing, half-written or damaged is written again; where no
cache can be written (a read-only or full disk), each process prepares the graph in a
private temporary folder. Writers build it in a private temporary folder and rename it into
place, so a reader sees a whole cache or none, and two writers at once cost only time.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .prepare import VARIANT, prepare

log = logging.getLogger(__name__)

GRAPH = "model.onnx"
WEIGHTS = "model.data"
MANIFEST = "manifest.json"
# A temporary folder older than this was left by a writer that died (Ctrl-C, a full disk).
STALE_SECONDS = 3600


def root() -> Path:
    """The folder of the caches: $DK_MIRROR_MODEL_CACHE when set; else beside the other
    caches of dk-mirror (as in textindex/sqlite/folder.py), $DK_MIRROR_HOME/cache when set (a
    self-contained install), else the platform's user cache folder."""
    from ..config import ENV_MODEL_CACHE

    chosen = os.environ.get(ENV_MODEL_CACHE)
    if chosen:
        return Path(chosen).expanduser()
    home = os.environ.get("DK_MIRROR_HOME")
    if home:
        return Path(home).expanduser() / "cache" / "models"
    import platformdirs

    return Path(platformdirs.user_cache_dir("dk-mirror", appauthor=False)) / "models"


def folder(original: Path, version: str, runtime_version: str, under: Path) -> Path:
    """Where the prepared copy of `original` (its package at `version`) for this
    onnxruntime version lives in the caches folder `under`: a new version of any (or a new
    file size, or another way of preparing it) is a new folder, never a stale graph."""
    size = original.stat().st_size
    name = f"{original.parent.name}-{version}-{size}-{VARIANT}-onnxruntime-{runtime_version}"
    return under / name


def _manifest(original: Path, version: str, runtime_version: str) -> dict[str, Any]:
    size = original.stat().st_size
    return {
        "original": str(original),
        "version": version,
        "size": size,
        "ort": runtime_version,
        "variant": VARIANT,
    }


def find(original: Path, version: str, runtime_version: str, under: Path) -> Path | None:
    """The cached graph for `original` in `under`, when a whole cache is there; else None."""
    try:
        where = folder(original, version, runtime_version, under)
        manifest = json.loads((where / MANIFEST).read_text(encoding="utf-8"))
        expected = _manifest(original, version, runtime_version)
        whole = (
            all(manifest.get(k) == v for k, v in expected.items())
            and (where / GRAPH).stat().st_size == manifest["graph_bytes"]
            and (where / WEIGHTS).stat().st_size == manifest["weights_bytes"]
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # none yet, or not readable: the packaged model serves
    return where / GRAPH if whole else None


def discard(graph: Path) -> None:
    """Remove the cache holding `graph` (it failed to load); the next load rewrites it.
    Renamed aside first, so no reader finds it half removed."""
    where = graph.parent
    aside = where.with_name(f".discard-{where.name}-{os.getpid()}")
    try:
        where.rename(aside)
    except OSError:
        return  # gone already, or another process moved it
    shutil.rmtree(aside, ignore_errors=True)


def write(original: Path, version: str, onnxruntime: Any, under: Path) -> Path | None:
    """Prepare and optimise `original` (its package at `version`) once and save it as the
    cache in `under`; the cached graph, or None when it cannot be written there (a read-only
    or full disk: the caller prepares a private copy)."""
    runtime_version = onnxruntime.__version__
    target = folder(original, version, runtime_version, under)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _sweep(target.parent)
        scratch = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    except OSError as exc:
        log.debug("no model cache in %s: %s", target.parent, exc)
        return None
    try:
        save(prepare(original, scratch, onnxruntime), scratch, onnxruntime)
        manifest = _manifest(original, version, runtime_version)
        manifest["graph_bytes"] = (scratch / GRAPH).stat().st_size
        manifest["weights_bytes"] = (scratch / WEIGHTS).stat().st_size
        # Written last: a folder without it is never taken for a cache.
        (scratch / MANIFEST).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")
        if target.exists() and find(original, version, runtime_version, under) is None:
            discard(target / GRAPH)  # damaged (whole ones get their manifest before the rename)
        scratch.rename(target)  # atomic; fails when another writer was first
    except Exception as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        if target.is_dir():
            return find(original, version, runtime_version, under)  # another was first
        log.debug("model cache not written to %s: %s", target, exc)
        return None
    return target / GRAPH


def save(prepared: Path, where: Path, onnxruntime: Any) -> Path:
    """Optimise the prepared graph and save it in the folder `where` as GRAPH and WEIGHTS
    (the prepared file is removed); the saved graph."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    # EXTENDED, not ALL: what ALL adds is laid out for this CPU, and a cache folder can be
    # shared by machines (a network home); for this model both compute the same.
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(where / GRAPH)
    # The weights in a file of their own, which onnxruntime memory-maps when it loads.
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", WEIGHTS
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )
    onnxruntime.InferenceSession(
        str(prepared), sess_options=options, providers=["CPUExecutionProvider"]
    )
    prepared.unlink()
    return where / GRAPH


def _sweep(root: Path) -> None:
    """Remove temporary folders that writers which died left behind."""
    now = time.time()
    for left in root.glob(".tmp-*"):
        try:
            if now - left.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(left, ignore_errors=True)
        except OSError:
            continue
