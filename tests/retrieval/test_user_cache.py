"""What one process holds is capped (helpers.retrieval.users): INDEX_CACHE_MB or a number of users, least recently
used dropped first, and a dropped user opens again with the same results."""

from __future__ import annotations

import pytest
from _embedders import HashEmbedder

from helpers.config import ConfigError, load_settings
from helpers.retrieval import MemoryIndex

EMBEDDER = HashEmbedder()


def fill(index: MemoryIndex, user: str, n: int = 30) -> None:
    texts = [f"{user} remembers thing number {i}" for i in range(n)]
    vectors = EMBEDDER.embed(texts)
    index.insert_batch(user, [index.new_doc(user, "fact", t, v, None) for t, v in zip(texts, vectors)])


def test_the_least_recently_used_users_go_first_within_the_byte_cap(mock_store):
    writer = MemoryIndex(mock_store, EMBEDDER)
    for user in "abcdef":
        fill(writer, user)
    probe = MemoryIndex(mock_store, EMBEDDER)
    probe.search("a", "thing", k=3)
    one_user = probe.cache.nbytes
    index = MemoryIndex(mock_store, EMBEDDER, max_bytes=int(3.5 * one_user))
    want = {user: [h.id for h in probe.search(user, "thing number 7", k=3)] for user in "abcdef"}
    for user in "abcdef":
        assert [h.id for h in index.search(user, "thing number 7", k=3)] == want[user]
    assert index.cache.users() == ["d", "e", "f"] and index.stats["evictions"] == 3
    assert index.cache.nbytes <= index.cache.max_bytes
    index.search("d", "thing", k=1)  # used again: now the most recent
    index.search("a", "thing", k=1)
    assert index.cache.users() == ["f", "d", "a"]
    assert [h.id for h in index.search("b", "thing number 7", k=3)] == want["b"]  # opened again, same results


def test_a_user_bigger_than_the_cap_is_still_served(mock_store):
    fill(MemoryIndex(mock_store, EMBEDDER), "big", 50)
    index = MemoryIndex(mock_store, EMBEDDER, max_bytes=1)
    assert len(index.search("big", "thing", k=5)) == 5 and index.cache.users() == ["big"]
    index.search("other", "thing", k=5)
    assert index.cache.users() == ["other"]


def test_a_number_of_users_caps_too(mock_store):
    index = MemoryIndex(mock_store, EMBEDDER, max_users=2)
    for user in "abc":
        fill(index, user, 3)
        index.search(user, "thing", k=1)
    assert index.cache.users() == ["b", "c"]


def test_the_cap_is_a_setting(monkeypatch, mock_store):
    assert load_settings({}).index_cache_mb == 256
    assert load_settings({"INDEX_CACHE_MB": "64"}).index_cache_mb == 64
    with pytest.raises(ConfigError, match="INDEX_CACHE_MB"):
        load_settings({"INDEX_CACHE_MB": "lots"})
    monkeypatch.setenv("INDEX_CACHE_MB", "3")
    assert MemoryIndex(mock_store, EMBEDDER).cache.max_bytes == 3 * 2**20
