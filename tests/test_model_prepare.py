"""The graph the semantic tier runs (mirror/semantic/prepare.py): the packaged model's meaning
kept, its no-op NaN guards gone, and nothing said on the user's terminal while preparing."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from mirror.semantic import model
from mirror.semantic.prepare import drop_nan_guards

from .model_marks import OWN_MODEL_CACHE

pytestmark = OWN_MODEL_CACHE
TEXTS = [
    "how do I keep a service worker alive while waiting for a network response",
    "Cache model downloads from TF Hub so a notebook does not fetch them again",
    "tf.keras.layers.Dense",
    "The Topics API lets the browser share coarse interests without third-party cookies.",
    "Lighthouse flags render-blocking stylesheets; inline the critical CSS.",
    "chrome.storage.session keeps values in memory while the extension runs",
]


def test_the_prepared_graph_means_what_the_packaged_one_means(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import onnxruntime

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with caplog.at_level(logging.DEBUG):
        prepared = model.Embedder()
        vectors = prepared.embed(TEXTS)  # this test's own home: prepared now
    # The quantiser's advice (for image models) is never logged, and preparing (a server
    # does it on a thread of its own) leaves the process' logging as it was.
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]
    assert root.handlers == handlers and root.level == level
    packaged = model.Embedder()
    packaged.embed(["load"])
    packaged._session = onnxruntime.InferenceSession(
        str(packaged._original()), providers=["CPUExecutionProvider"]
    )
    before = packaged.embed(TEXTS)
    assert float((vectors * before).sum(axis=1).min()) > 0.97
    # Each text's nearest other text is the same either way.
    near = [np.argsort(-(v @ v.T), axis=1)[:, 1] for v in (vectors, before)]
    assert list(near[0]) == list(near[1])


def test_a_nan_guard_is_dropped_only_where_it_does_nothing() -> None:
    import onnx
    import onnxruntime
    from onnx import TensorProto, helper

    def guarded(output: str) -> onnx.ModelProto:
        nodes = [
            helper.make_node("Softmax", ["x"], ["p"], axis=-1),
            helper.make_node("IsNaN", ["p"], ["nan"]),
            helper.make_node("Where", ["nan", "zero", "p"], ["safe"]),
            helper.make_node("Identity", ["safe"], ["y"]),
        ]
        zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])
        inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])]
        outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, [2, 3])]
        graph = helper.make_graph(nodes, "g", inputs, outputs, [zero])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    model_proto = guarded("y")
    assert drop_nan_guards(model_proto.graph) == 1
    assert [n.op_type for n in model_proto.graph.node] == ["Softmax", "Identity"]
    x = np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    session = onnxruntime.InferenceSession(
        model_proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    assert np.allclose(session.run(None, {"x": x})[0], expected)
    whole = guarded("safe")  # the guard's result is the graph's output: left as it is
    assert drop_nan_guards(whole.graph) == 0 and len(whole.graph.node) == 4
