"""The in-memory vector search (mirror.semantic.matrix): the two-step search of a large
matrix (signs shortlist, exact rescoring) finds what the exact scan finds."""

from __future__ import annotations

import pytest

np = pytest.importorskip("numpy", reason="the semantic extra (numpy) is not installed")

from mirror.semantic import matrix  # noqa: E402


def _clustered(rows: int, dims: int = 384, seed: int = 0) -> np.ndarray:
    """Unit vectors around 50 topics, as document embeddings cluster (not uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(50, dims))
    vectors = centres[rng.integers(0, 50, rows)] + rng.normal(scale=0.8, size=(rows, dims))
    out: np.ndarray = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    return out


def _matrix(vectors: np.ndarray) -> matrix.Matrix:
    blobs, scales = zip(*matrix.quantize(vectors), strict=True)
    return matrix.Matrix(1, [f"doc-{i}" for i in range(len(vectors))], blobs, scales)


def test_a_large_matrix_finds_what_the_exact_scan_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(matrix, "EXACT_UP_TO", 1000)
    monkeypatch.setattr(matrix, "SHORTLIST", 200)
    vectors = _clustered(6040)
    large = _matrix(vectors[:6000])
    assert large.signs is not None  # the two-step search
    queries = vectors[6000:]  # about the same topics, not in the matrix
    overlap = 0
    for query in queries:
        two_step = large.top(query, 10)
        exact = large._exact(query)
        best = [f"doc-{i}" for i in np.argsort(-exact)[:10]]
        overlap += len({n for n, _ in two_step} & set(best))
        scores = [s for _, s in two_step]
        assert scores == sorted(scores, reverse=True)
        # Scores are the exact cosines of the int8 rows, whichever step found them.
        assert scores[0] == pytest.approx(float(exact.max()), abs=1e-4)
    assert overlap / (10 * len(queries)) >= 0.95


def test_a_document_finds_itself_first_and_small_matrices_scan_exactly() -> None:
    vectors = _clustered(300)
    small = _matrix(vectors)
    assert small.signs is None
    for i in (0, 17, 299):
        name, score = small.top(vectors[i], 3)[0]
        assert (name, round(score, 2)) == (f"doc-{i}", 1.0)


def test_edge_sizes() -> None:
    empty = matrix.Matrix(1, [], [], [])
    assert empty.top(np.ones(384, dtype=np.float32), 5) == []
    one = _matrix(_clustered(1))
    assert [n for n, _ in one.top(np.ones(384, dtype=np.float32), 5)] == ["doc-0"]
    assert one.top(np.ones(384, dtype=np.float32), 0) == []
