"""Vectors as int8 bytes for the store, and a cosine top-k over all of them held in memory.

A brute-force float32 scan of 50,000 x 384 vectors reads 77 MB a query: 60-70 ms at p50 on
the 2-core dev machine under load (memory bandwidth shared with everything else), more than
the whole hybrid budget. So a large matrix is searched in two steps (binary quantization
with rescoring): every vector's signs, 48 bytes a document (2.4 MB for 50,000), give a
Hamming distance to the query's signs, which ranks the angle well enough to pick a shortlist
of candidates; only those are scored exactly from their int8 rows (bench/bench_hybrid_scale.py
on 21,632 real vectors: 99.6% of the exact top 10 and 95.5% of the top 100, in 14 ms at
p50 against 33 ms for the exact scan, both under load). A small matrix is scored exactly. In memory: the int8 rows (19 MB at 50,000) and
their signs, kept per process until the stored index changes (its generation).

No BLAS: numpy hands a matrix-vector product to OpenBLAS, whose helper threads must be
scheduled before it returns; on a shared 2-core machine that wait cost 37 ms for a 2,000-row
product that takes 0.1 ms on one thread. einsum runs in the calling thread.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Up to this many rows the exact scan is cheap enough (a few MB read).
EXACT_UP_TO = 8192
# Candidates rescored exactly: this many per result asked for, and at least SHORTLIST.
PER_RESULT = 20
SHORTLIST = 1000


def quantize(vectors: np.ndarray) -> list[tuple[bytes, float]]:
    """Each row as (int8 bytes, scale): row ~= int8 * scale."""
    out: list[tuple[bytes, float]] = []
    for row in vectors:
        peak = float(np.abs(row).max())
        scale = peak / 127.0 if peak > 0 else 1.0
        out.append((np.round(row / scale).astype(np.int8).tobytes(), scale))
    return out


def _signs(rows: np.ndarray) -> np.ndarray:
    """The sign bits of each row, packed: one uint64 array per 64 dimensions (words x rows),
    so the Hamming distance is a few passes over contiguous memory."""
    packed = np.packbits(rows > 0, axis=1)
    width = -(-packed.shape[1] // 8) * 8  # whole uint64 words
    if packed.shape[1] != width:
        packed = np.pad(packed, ((0, 0), (0, width - packed.shape[1])))
    return np.ascontiguousarray(packed.view(np.uint64).T)


class Matrix:
    """Document vectors in memory, for one `generation` of the stored index."""

    def __init__(
        self, generation: int, names: Sequence[str], blobs: Sequence[bytes], scales: Sequence[float]
    ) -> None:
        self.generation = generation
        self.names = list(names)
        if names:
            self.rows = np.frombuffer(b"".join(blobs), dtype=np.int8).reshape(len(names), -1)
        else:
            self.rows = np.zeros((0, 0), dtype=np.int8)
        self.scales = np.asarray(scales, dtype=np.float32)
        self.signs = _signs(self.rows) if len(self.names) > EXACT_UP_TO else None

    def _exact(self, query: np.ndarray, ids: np.ndarray | None = None) -> np.ndarray:
        rows = self.rows if ids is None else self.rows[ids]
        scales = self.scales if ids is None else self.scales[ids]
        dots: np.ndarray = np.einsum("ij,j->i", rows.astype(np.float32), query)
        return dots * scales

    def candidates(self, query: np.ndarray, k: int) -> np.ndarray | None:
        """The ids of the rows whose signs differ least from the query's (None: every row)."""
        if self.signs is None:
            return None
        count = max(SHORTLIST, k * PER_RESULT)
        if count >= len(self.names):
            return None
        bits = _signs(query[None, :])[:, 0]
        distance = np.bitwise_count(self.signs[0] ^ bits[0]).astype(np.uint16)
        for word, bit in zip(self.signs[1:], bits[1:], strict=True):
            distance += np.bitwise_count(word ^ bit)
        return np.argpartition(distance, count - 1)[:count]

    def top(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The `k` documents most similar to `query` (cosine), best first."""
        if not self.names or k <= 0:
            return []
        query = query.astype(np.float32)
        ids = self.candidates(query, k)
        scores = self._exact(query, ids)
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        best = best[np.argsort(-scores[best], kind="stable")]
        found = best if ids is None else ids[best]
        return [(self.names[i], float(s)) for i, s in zip(found, scores[best], strict=True)]
