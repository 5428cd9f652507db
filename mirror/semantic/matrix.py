"""Vectors as int8 bytes for the store, and a brute-force cosine top-k over all of them.

Brute force is exact and fast enough here: 50,000 x 384 float32 is one 77 MB matrix and one
matrix-vector product (a few ms); int8 on disk is 384 bytes + a scale per document.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def quantize(vectors: np.ndarray) -> list[tuple[bytes, float]]:
    """Each row as (int8 bytes, scale): row ~= int8 * scale."""
    out: list[tuple[bytes, float]] = []
    for row in vectors:
        peak = float(np.abs(row).max())
        scale = peak / 127.0 if peak > 0 else 1.0
        out.append((np.round(row / scale).astype(np.int8).tobytes(), scale))
    return out


class Matrix:
    """Document vectors in memory, for one `generation` of the stored index."""

    def __init__(
        self, generation: int, names: Sequence[str], blobs: Sequence[bytes], scales: Sequence[float]
    ) -> None:
        self.generation = generation
        self.names = list(names)
        if names:
            raw = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(names), -1)
            self.vectors = raw.astype(np.float32) * np.asarray(scales, dtype=np.float32)[:, None]
        else:
            self.vectors = np.zeros((0, 0), dtype=np.float32)

    def top(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` documents most similar to `query` (cosine), best first."""
        if not self.names or k <= 0:
            return []
        scores = self.vectors @ query.astype(np.float32)
        k = min(k, len(self.names))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.names[i], float(scores[i])) for i in best]
