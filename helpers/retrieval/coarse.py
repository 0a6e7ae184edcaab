"""A coarse index over a large user's embeddings, so a search scores a third of them. Plumbing for 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Below `COARSE_MIN_ROWS` memories a user's embedding ranking is exact: one matrix product over every row (at
10,000 rows of 384 dimensions that is about 15 MB read per question). Above it, reading the whole matrix per
question is what grows with the memory, so the rows are grouped once into about √n lists by spherical k-means
(an inverted-file index, as vector databases build): a question is compared with the lists' centroids, the
closest lists are opened until they hold `PROBE_SHARE` of the candidate rows, and only those rows are scored,
exactly. The ranking is then approximate: a memory in a list that was not opened is not found by its embedding
(BM25 can still find it), so the lists are opt-in (`MemoryIndex(approximate=True)`) and every search is exact by
default. `python -m helpers.bench retrieval --approximate` times both and reports how often they agree on its
synthetic memories; `python -m helpers.bench coarse` measures the agreement on real conversations.

The lists are trained by the process that writes the user's index file (helpers.retrieval.users, at a
checkpoint) and stored in that file (helpers.retrieval.snapshot) with the embeddings grouped by list, so a
new process opens them with the rest;
rows added later go to their nearest list as they arrive, and the lists are trained again when the user has
twice the rows they were trained on.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CoarseIndex", "COARSE_MIN_ROWS", "PROBE_SHARE", "train"]

COARSE_MIN_ROWS = 20_000  # fewer live rows: the exact scan is cheap enough (about 5 ms on 2 cores), keep it exact
PROBE_SHARE = 0.3  # the share of candidate rows a search scores, the closest lists first: the smallest share
# keeping 97% of the exact embedding top 50 on the LoCoMo tune part (`bench coarse`, its probe_sweep)
SAMPLE_PER_LIST = 48  # k-means trains on at most this many rows per list (faiss advises at least 39)
ITERATIONS = 10
CHUNK = 8192  # rows assigned per matrix product


class CoarseIndex:
    """Centroids (lists × dim, unit length) and the list of each row (`assign`, int32, for rows so far)."""

    def __init__(self, centroids: np.ndarray, assign: np.ndarray, trained_n: int):
        self.centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        self.assign = np.array(assign, dtype=np.int32)  # a copy: it grows as rows arrive
        self.trained_n = int(trained_n)
        self.dirty: set[int] = set()  # rows whose embedding changed after they were assigned
        self.stale: set[int] = set()  # rows whose packed copy is out of date (their embedding changed)
        self.vectors: np.ndarray | None = None  # the embeddings grouped by list (`pack`), built on first use
        self.order, self.starts, self.packed_n = np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), 0

    @property
    def lists(self) -> int:
        return len(self.centroids)

    def nbytes(self) -> int:
        packed = 0 if self.vectors is None else self.vectors.nbytes + self.order.nbytes
        return self.centroids.nbytes + self.assign.nbytes + packed

    def extend(self, emb: np.ndarray, n: int) -> None:
        """Assign rows added since (up to `n`) and rows whose embedding changed to their nearest list."""
        done = len(self.assign)
        if n > done:
            self.assign = np.concatenate([self.assign, nearest(self.centroids, emb[done:n])])
        if self.dirty:
            rows = np.fromiter(sorted(r for r in self.dirty if r < n), dtype=np.int64)
            if len(rows):
                self.assign[rows] = nearest(self.centroids, emb[rows])
            self.stale |= {int(r) for r in rows if r < self.packed_n}
            self.dirty.clear()

    def probe(
        self, vector: np.ndarray, emb: np.ndarray, mask: np.ndarray, share: float = PROBE_SHARE
    ) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines): the rows within `mask` of the lists closest to `vector`, opened until they hold
        `share` of the rows in `mask`, each scored exactly."""
        n = len(mask)
        self.extend(emb, n)
        assign = self.assign[:n]
        counts = np.bincount(assign[mask], minlength=self.lists)
        vector = np.asarray(vector, dtype=np.float32)
        order = np.argsort(-(self.centroids @ vector), kind="stable")
        wanted = max(1, math.ceil(share * int(counts.sum())))
        opened = np.sort(order[: int(np.searchsorted(np.cumsum(counts[order]), wanted)) + 1])
        if n - self.packed_n > max(1024, n // 8) or self.vectors is None:
            self.pack(emb, n)
        rows = [self.order[self.starts[i] : self.starts[i + 1]] for i in opened]
        sims = [self.vectors[self.starts[i] : self.starts[i + 1]] @ vector for i in opened]
        pick = np.zeros(self.lists, dtype=bool)
        pick[opened] = True
        late = np.arange(self.packed_n, n)  # rows since the packing (and changed rows): read from `emb`
        late = np.concatenate([late, np.fromiter(self.stale, dtype=np.int64)]) if self.stale else late
        late = late[pick[assign[late]]]
        rows.append(late)
        sims.append(np.asarray(emb[late], dtype=np.float32) @ vector)
        rows_at, scores = np.concatenate(rows), np.concatenate(sims)
        keep = mask[rows_at]
        if self.stale:
            keep[: len(rows_at) - len(late)] &= ~np.isin(rows_at[: len(rows_at) - len(late)], list(self.stale))
        return rows_at[keep], scores[keep]

    def pack(self, emb: np.ndarray, n: int) -> None:
        """Copy the rows' embeddings grouped by list (each list one contiguous block), so a search reads only
        the blocks it opens."""
        self.extend(emb, n)
        self.order = np.argsort(self.assign[:n], kind="stable")
        self.starts = np.searchsorted(self.assign[:n][self.order], np.arange(self.lists + 1))
        self.vectors = np.ascontiguousarray(emb[self.order], dtype=np.float32)
        self.packed_n, self.stale = n, set()


def nearest(centroids: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """The index of the closest centroid (largest cosine) of each vector, int32."""
    out = np.empty(len(vectors), dtype=np.int32)
    for start in range(0, len(vectors), CHUNK):
        block = np.asarray(vectors[start : start + CHUNK], dtype=np.float32)
        out[start : start + len(block)] = np.argmax(block @ centroids.T, axis=1)
    return out


def train(emb: np.ndarray, live: np.ndarray, *, seed: int = 0) -> CoarseIndex:
    """Spherical k-means over the live rows of `emb` (a sample of SAMPLE_PER_LIST per list), then every row
    assigned to its nearest list. Deterministic for the same rows."""
    n = len(live)
    rows = np.flatnonzero(live)
    lists = max(8, int(math.sqrt(len(rows))))
    rng = np.random.default_rng(seed)
    take = np.sort(rng.choice(rows, size=min(len(rows), lists * SAMPLE_PER_LIST), replace=False))
    sample = np.asarray(emb[take], dtype=np.float32)
    centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
    for _ in range(ITERATIONS):
        near = nearest(centroids, sample)
        sums = np.zeros_like(centroids)
        np.add.at(sums, near, sample)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        kept = norms[:, 0] > 0  # an empty list keeps its centroid
        centroids[kept] = sums[kept] / norms[kept]
    return CoarseIndex(centroids, nearest(centroids, emb[:n]), trained_n=len(rows))


def due(coarse: CoarseIndex | None, live_rows: int, min_rows: int | None) -> bool:
    """Whether the lists should be (re)trained: enough live rows and none yet, or twice the rows trained on."""
    if min_rows is None or live_rows < min_rows:
        return False
    return coarse is None or live_rows >= 2 * coarse.trained_n
