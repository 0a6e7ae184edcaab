"""Tests for helpers.retrieval.ranking (rrf, top_k, recency) and that MemoryIndex.search composes them."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers.db.store import mongomock_store
from helpers.retrieval import MemoryIndex
from helpers.retrieval.ranking import LEXICAL_WEIGHT, RRF_K, recency_weight, rrf, top_k, with_recency

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)


class HashEmbedder:
    """A deterministic pseudo-random unit vector per text: fast, and no meaning at all."""

    name, dim = "hash-embedder", 384

    def embed(self, texts: list[str]) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        rows = [np.random.default_rng(seed).normal(size=self.dim) for seed in seeds]
        return np.asarray([row / np.linalg.norm(row) for row in rows], dtype=np.float32).reshape(-1, self.dim)


def test_rrf_scores_are_weighted_reciprocal_ranks():
    fused = rrf([["a", "b", "c"], ["c", "a"]], k=60, weights=[1.0, 0.5])
    assert fused == pytest.approx({"a": 1 / 61 + 0.5 / 62, "c": 1 / 63 + 0.5 / 61, "b": 1 / 62})
    assert list(fused) == ["a", "c", "b"]  # best first


def test_rrf_rewards_agreement_over_one_top_rank():
    # "both" is second in each list; each list's winner appears only once
    fused = rrf([["x", "both"], ["y", "both"]])
    assert next(iter(fused)) == "both"


def test_rrf_ties_keep_first_seen_order_and_default_weights_are_one():
    assert list(rrf([["a"], ["b"]])) == ["a", "b"] and rrf([["a"]]) == {"a": 1 / (RRF_K + 1)}


def test_rrf_refuses_mismatched_weights():
    with pytest.raises(ValueError, match="2 weights for 1 rankings"):
        rrf([["a"]], weights=[1.0, 2.0])


@given(st.lists(st.lists(st.integers(0, 30), unique=True, max_size=12), min_size=1, max_size=4))
def test_rrf_is_order_free_in_its_rankings(rankings):
    forward, backward = rrf(rankings), rrf(rankings[::-1])
    assert forward.keys() == backward.keys()
    assert all(forward[key] == pytest.approx(backward[key]) for key in forward)
    assert list(forward.values()) == sorted(forward.values(), reverse=True)


def test_top_k_skips_non_finite_and_breaks_ties_by_newer():
    scores = np.array([0.5, -np.inf, 0.9, 0.5, np.nan])
    assert top_k(scores, 10, newer=np.array([1.0, 0, 0, 2.0, 0])) == [2, 3, 0]
    assert top_k(scores, 1) == [2] and top_k(np.full(3, -np.inf), 2) == []


def test_recency_halves_per_half_life_and_negative_scores_sink_too():
    weight = recency_weight(np.array([0.0, 86_400.0, -5.0]), half_life_days=1)
    assert weight.tolist() == [1.0, 0.5, 1.0] and recency_weight(np.array([9e9]), None).tolist() == [1.0]
    assert with_recency(np.array([0.8, -0.2]), np.array([0.5, 0.5])).tolist() == [0.4, -0.4]


TEXTS = [
    "The user's flight UA1432 leaves Denver at 7am.",
    "Dinner at Bestia is on Friday at 7:45pm.",
    "The user's sister Ines lives in Lisbon.",
    "The user loves hiking and espresso in Denver.",
    "Flight DL1187 lands at LAX on Thursday.",
    "The Getty Center entry is at 10:15am on Saturday.",
]


@pytest.fixture(scope="module")
def index():
    index = MemoryIndex(mongomock_store(), HashEmbedder(), backend="numpy")
    for i, text in enumerate(TEXTS):
        index.insert(
            index.new_doc("u", "fact", text, index.embedder.embed([text])[0], None, now=T0 + timedelta(hours=i))
        )
    return index


@pytest.mark.parametrize("query", ["flight Denver", "When is dinner on Friday?", "Lisbon sister", "espresso"])
def test_hybrid_search_is_rrf_of_the_lexical_and_vector_rankings(index, query):
    lexical = [h.id for h in index.search("u", query, k=len(TEXTS), mode="lexical", half_life_days=None)]
    vector = [h.id for h in index.search("u", query, k=len(TEXTS), mode="vector", half_life_days=None)]
    hybrid = index.search("u", query, k=len(TEXTS), mode="hybrid", half_life_days=None)
    fused = rrf([vector, lexical], weights=[1.0, LEXICAL_WEIGHT])
    assert [h.id for h in hybrid] == list(fused)
    assert [h.score for h in hybrid] == pytest.approx(list(fused.values()))


def test_holding_skips_the_refresh_until_the_batch_ends_then_catches_up():
    """An import writes through one index: while it holds a user, a write by another process (straight into the
    store) is not re-read per call; on leaving, the cache catches up with it."""
    store = mongomock_store()
    mine, other = (
        MemoryIndex(store, HashEmbedder(), backend="numpy"),
        MemoryIndex(store, HashEmbedder(), backend="numpy"),
    )

    def add(idx, text, hours):
        idx.insert(idx.new_doc("u", "fact", text, idx.embedder.embed([text])[0], None, now=T0 + timedelta(hours=hours)))

    add(mine, TEXTS[0], 0)
    assert len(mine.all("u", now=T0 + timedelta(days=1))) == 1
    with mine.holding("u"):
        add(mine, TEXTS[1], 1)  # its own write: in the cache at once
        add(other, TEXTS[2], 2)  # another writer: not re-read while holding
        seen = {h.text for h in mine.all("u", now=T0 + timedelta(days=1))}
        assert seen == {TEXTS[0], TEXTS[1]}
    assert {h.text for h in mine.all("u", now=T0 + timedelta(days=1))} == set(TEXTS[:3])


# -- what 05's learner writes: cosine_rank and rrf_ranking, the exercises' fallbacks
@given(st.lists(st.lists(st.floats(-5, 5), min_size=3, max_size=3), min_size=1, max_size=8))
def test_cosine_rank_orders_as_top_k_on_unit_vectors_whatever_the_lengths(rows):
    from helpers.retrieval.ranking import cosine_rank, cosine_scores

    vectors = np.array(rows, dtype=np.float64) + 0.01  # no all-zero row
    query = np.array([0.3, -1.2, 2.0])
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ranked = cosine_rank(query, vectors * 7.5)  # lengths never change the order
    sims = cosine_scores(unit, query / np.linalg.norm(query))
    assert sorted(ranked) == list(range(len(rows)))
    assert all(sims[a] >= sims[b] - 1e-6 for a, b in zip(ranked, ranked[1:]))


def test_rrf_ranking_is_rrf_without_the_scores():
    from helpers.retrieval.ranking import rrf_ranking

    rankings = [["a", "x", "b"], ["y", "z", "b"]]
    assert rrf_ranking(rankings) == list(rrf(rankings)) == ["b", "a", "y", "x", "z"]
    assert rrf_ranking(rankings, k=0) == ["a", "y", "b", "x", "z"]
    assert rrf_ranking([["a", "b"], ["b", "a"]], weights=[0.5, 1.0]) == ["b", "a"]
