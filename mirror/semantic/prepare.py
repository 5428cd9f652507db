"""The packaged model made fast enough to read 192 word pieces a page: done once per machine.

Why: a page's vector reads its first 192 word pieces (model.MAX_TOKENS), three times what it
read before, and the corpus' 2,774 pages must embed in under a minute on a 2-core machine.
The packaged graph keeps its weights as int8 but computes in float32 (each run casts them
back), and guards every attention softmax with IsNaN/Where. Three steps, each with a
well-kept tool, make it about twice as fast at 192 pieces (bench/bench_import_embed.py):
1. onnxruntime's basic optimisations fold the int8 weights into float32 constants;
2. the NaN guards are dropped (onnx): the exporter adds them for a softmax row whose every
   key is masked out, and the [CLS] piece is never masked, so no row is. At 192 pieces
   they took 30% of a run;
3. onnxruntime's dynamic quantisation makes the matrix products int8 again, now computed in
   int8 (weights per output channel; activations quantised per run).
Vectors move a little from the packaged model's (cosine 0.99 on average): they are other
vectors, named by VARIANT in the model key, so a store's old vectors are rebuilt, never
mixed with these. Every session of this tier loads the graph made here (cache.py keeps it),
so page and query vectors always come from the same arithmetic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Names this graph in the model key (model.status) and the cache folder (cache.folder).
VARIANT = "nonan-dq8"
FOLDED = "folded.onnx"
QUANTISED = "quantised.onnx"


def prepare(original: Path, scratch: Path, onnxruntime: Any) -> Path:
    """The graph of `original` made fast, written in the folder `scratch` (its path)."""
    import onnx

    folded = scratch / FOLDED
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(
        str(original), sess_options=options, providers=["CPUExecutionProvider"]
    )
    graph = onnx.load(str(folded))
    drop_nan_guards(graph.graph)
    _tag_as_preprocessed(graph)
    onnx.save(graph, str(folded))
    quantised = scratch / QUANTISED
    _quantise(folded, quantised)
    folded.unlink()
    return quantised


def drop_nan_guards(graph: Any) -> int:
    """Replace each Where(IsNaN(x), c, x) by x, in place; how many were dropped."""
    made_by = {output: node for node in graph.node for output in node.output}
    kept_as: dict[str, str] = {}
    dropped = []
    for node in graph.node:
        if node.op_type != "Where":
            continue
        test = made_by.get(node.input[0])
        if test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]:
            kept_as[node.output[0]] = node.input[2]
            dropped += [node, test]
    outputs = {output.name for output in graph.output}
    if outputs & kept_as.keys():
        return 0  # a guard's result is the model's output: leave the graph whole
    for node in dropped:
        graph.node.remove(node)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in kept_as:
                node.input[i] = kept_as[name]
    return len(dropped) // 2


def _tag_as_preprocessed(graph: Any) -> None:
    """Tag the graph as onnxruntime's quantisation pre-processing tags one, so the quantiser
    does not advise it through `logging.warning` on the root logger (which also gives that
    logger a handler to stderr when it has none, from whatever thread prepares the graph).
    Its optimisation step is step 1 above; its symbolic shape inference fails on this
    exported graph ("Incomplete symbolic shape inference"), and the quantiser needs none."""
    from onnxruntime.quantization.quant_utils import add_pre_process_metadata

    add_pre_process_metadata(graph)


def _quantise(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=["MatMul"],
        per_channel=True,
    )
