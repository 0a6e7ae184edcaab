"""Coarse lists over a large user's embeddings (helpers.retrieval.coarse): a search scores about a third of the
rows, the closest lists first; the lists travel in the index file, follow rows added later, and
every ranking is exact unless `approximate=True`."""

from __future__ import annotations

import numpy as np
import pytest
from _embedders import HashEmbedder

from helpers.retrieval import MemoryIndex
from helpers.retrieval import index as index_module
from helpers.retrieval import users as users_module
from helpers.retrieval.coarse import PROBE_SHARE, CoarseIndex, due, nearest, train

EMBEDDER = HashEmbedder()
MIN_ROWS = 300  # the threshold lowered so the tests stay quick (COARSE_MIN_ROWS is 20,000)


def clustered(groups: int = 40, per: int = 50, dim: int = 32, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Unit vectors in `groups` tight clusters; returns (vectors, group of each)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(groups, dim))
    labels = np.repeat(np.arange(groups), per)
    vectors = centres[labels] + rng.normal(scale=0.05, size=(groups * per, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32), labels


def test_a_search_scores_about_a_third_of_the_rows_and_its_own_cluster_first():
    vectors, labels = clustered()
    live = np.ones(len(vectors), dtype=bool)
    coarse = train(vectors, live)
    assert coarse.lists == int(np.sqrt(len(vectors))) and coarse.trained_n == len(vectors)
    for group in (0, 17, 39):
        query = vectors[labels == group].mean(axis=0)
        rows, sims = coarse.probe(query / np.linalg.norm(query), vectors, live)
        assert np.allclose(sims, vectors[rows] @ (query / np.linalg.norm(query)), atol=1e-6)  # scored exactly
        assert PROBE_SHARE * len(vectors) <= len(rows) < (PROBE_SHARE + 0.15) * len(vectors)
        assert set(np.flatnonzero(labels == group)) <= set(rows.tolist())  # its whole cluster is opened
    assert train(vectors, live).centroids.tobytes() == coarse.centroids.tobytes()  # deterministic


def test_rows_outside_the_mask_are_never_returned_and_new_or_changed_rows_are_assigned():
    vectors, labels = clustered()
    first = 1500
    coarse = train(vectors[:first], np.ones(first, dtype=bool))
    mask = np.ones(len(vectors), dtype=bool)
    mask[labels == 35] = False
    query = vectors[labels == 35][0]
    rows, _ = coarse.probe(query, vectors, mask)  # rows 1500.. arrive after training: assigned on the way
    assert len(coarse.assign) == len(vectors) and mask[rows].all()
    assert not set(np.flatnonzero(labels == 35)) & set(rows.tolist())
    moved = vectors.copy()
    moved[0] = vectors[labels == 20][0]  # row 0's embedding changes (re-embedded): it moves to that list
    coarse.dirty.add(0)
    rows, sims = coarse.probe(moved[0], moved, np.ones(len(moved), dtype=bool))
    assert coarse.assign[0] == nearest(coarse.centroids, moved[labels == 20][:1])[0]
    assert list(rows).count(0) == 1 and sims[list(rows).index(0)] == pytest.approx(1.0, abs=1e-5)  # its new vector


def test_lists_are_trained_from_the_threshold_and_again_at_twice_the_rows():
    assert not due(None, MIN_ROWS - 1, MIN_ROWS) and due(None, MIN_ROWS, MIN_ROWS)
    assert not due(None, 10**6, None)  # approximate=False: never
    trained = CoarseIndex(np.eye(4, dtype=np.float32), np.zeros(400, dtype=np.int32), trained_n=400)
    assert not due(trained, 799, MIN_ROWS) and due(trained, 800, MIN_ROWS)


@pytest.fixture
def low_threshold(monkeypatch):
    monkeypatch.setattr(index_module, "COARSE_MIN_ROWS", MIN_ROWS)
    monkeypatch.setattr(users_module, "SNAPSHOT_MIN_ROWS", 24)


def fill(index: MemoryIndex, user: str = "u", n: int = 2 * MIN_ROWS) -> list[str]:
    texts = [f"memory number {i} about topic {i % 37}" for i in range(n)]
    with index.holding(user):
        for start in range(0, n, 100):
            docs = [index.new_doc(user, "fact", t, EMBEDDER.embed_one(t), None) for t in texts[start : start + 100]]
            index.insert_batch(user, docs)
    return texts


def top(index: MemoryIndex, query: str, mode: str = "vector", k: int = 5) -> list[str]:
    return [h.text for h in index.search("u", query, k=k, mode=mode, half_life_days=None)]


def test_the_writer_trains_the_lists_and_a_new_process_opens_them_from_the_file(local_store, low_threshold):
    writer = MemoryIndex(local_store, EMBEDDER, approximate=True)
    texts = fill(writer)
    assert writer.stats["coarse_trained"] == 1
    opened = MemoryIndex(local_store, EMBEDDER, approximate=True)  # a new process: the lists come with the index file
    exact = MemoryIndex(local_store, EMBEDDER)  # the default: exact
    queries = texts[::50]
    assert [top(opened, q) for q in queries] == [top(writer, q) for q in queries]
    assert opened.stats["file_opens"] == 1 and opened.stats["coarse_trained"] == 0
    packed = opened.cache.peek("u").coarse  # the embeddings came grouped by list in the file: nothing re-packed
    assert packed.packed_n == len(texts) and len(packed.vectors) == len(texts) and packed.starts[-1] == len(texts)
    assert opened.stats["coarse_searches"] == len(queries) and exact.stats["coarse_searches"] == 0
    for q in queries:  # a memory asked for word for word is in the lists opened, so found first
        assert top(opened, q)[0] == top(exact, q)[0] == q
    late = "a memory written by another process after the file"
    writer.insert(writer.new_doc("u", "fact", late, EMBEDDER.embed_one(late), None))
    assert top(opened, late)[0] == late  # followed through the change log, assigned to its list


def test_below_the_threshold_or_by_default_every_ranking_is_exact(mock_store, low_threshold):
    small = MemoryIndex(mock_store, EMBEDDER, approximate=True)
    texts = fill(small, n=MIN_ROWS - 1)
    fresh = MemoryIndex(mock_store, EMBEDDER, approximate=True)
    exact = MemoryIndex(mock_store, EMBEDDER)
    assert [top(fresh, q, "hybrid") for q in texts[::40]] == [top(exact, q, "hybrid") for q in texts[::40]]
    assert fresh.stats["coarse_searches"] == 0 and fresh.stats["coarse_trained"] == 0
    big = MemoryIndex(mock_store, EMBEDDER)  # the default, past the threshold: nothing trained, exact
    fill(big, user="v", n=MIN_ROWS + 50)
    assert MemoryIndex(mock_store, EMBEDDER).cache.get("v").coarse is None
