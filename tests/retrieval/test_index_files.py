"""A user's index file (helpers.retrieval.snapshot): a new process opens it instead of reading every memory, searches
exactly as the process that wrote it, keeps its own later writes out of it, and erasure leaves no file behind."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from _embedders import HashEmbedder

from helpers.memory.forget import forget_user
from helpers.retrieval import MemoryIndex
from helpers.retrieval import users as users_module
from helpers.retrieval.schema import TurnUnit, content_hash
from helpers.retrieval.snapshot import index_root, open_snapshot, read_header, snapshot_path

PEOPLE = ["Maya", "Jonah", "Priya"]
WORDS = "tacos sushi ramen jazz hiking surfing pottery chess cycling espresso yoga climbing Lisbon Denver Tokyo".split()
START = datetime(2023, 5, 8, 14, 0, tzinfo=timezone.utc)


EMBEDDER = HashEmbedder()
MIN_ROWS = 24  # users with fewer memories keep no file (SNAPSHOT_MIN_ROWS, lowered here to keep the tests quick)


@pytest.fixture(autouse=True)
def few_rows_make_a_file(monkeypatch):
    monkeypatch.setattr(users_module, "SNAPSHOT_MIN_ROWS", MIN_ROWS)


QUERIES = ["Where does Maya live?", "jazz and espresso", "What did Priya say about Tokyo?", "climbing", "sushi ramen"]


def fill(index: MemoryIndex, user: str = "u", turns: int = MIN_ROWS + 10) -> None:
    """Turns of a dated conversation between named people, and facts, written as an import writes them."""
    rng = np.random.default_rng(7)
    units = [
        TurnUnit(
            seq,
            "user" if seq % 2 else "assistant",
            f"I love {rng.choice(WORDS)} and {rng.choice(WORDS)} near {rng.choice(WORDS)}.",
            START + timedelta(minutes=seq),
            PEOPLE[seq % 3],
        )
        for seq in range(1, turns + 1)
    ]
    with index.holding(user):
        index.add_turns(user, "s1", units)
        for word in WORDS[:6]:
            text = f"{PEOPLE[len(word) % 3]} likes {word}."
            index.insert(index.new_doc(user, "fact", text, EMBEDDER.embed_one(text), None, now=START))


def results(index: MemoryIndex, user: str = "u") -> list:
    return [
        [
            (h.id, h.text, h.score, h.similarity, h.lexical, h.created_at, h.updated_at, h.source, h.seen_count)
            for h in hits
        ]
        for q in QUERIES
        for mode in ("hybrid", "vector", "lexical")
        for hits in [index.search(user, q, k=8, mode=mode, now=START + timedelta(days=30), half_life_days=10)]
    ]


def test_a_new_process_opens_the_file_and_finds_exactly_what_the_writer_finds(local_store):
    writer = MemoryIndex(local_store, EMBEDDER)
    fill(writer)
    path = snapshot_path(index_root(local_store), local_store.db.name, "u")
    assert path.exists() and writer.stats["files_written"] == 1
    opened = MemoryIndex(local_store, EMBEDDER)  # a new process: nothing held
    from_db = MemoryIndex(local_store, EMBEDDER, index_files=False)  # every document read, as before index files
    assert results(opened) == results(writer) == results(from_db)
    assert opened.stats["file_opens"] == 1 and opened.stats["full_loads"] == 0
    assert opened.participants("u") == from_db.participants("u") == ["Jonah", "Maya", "Priya"]
    assert opened.count("u") == from_db.count("u") == MIN_ROWS + 10
    keys = {("s1", 5), ("s1", 6), ("s2", 5)}
    assert opened.episodes_at("u", keys) == from_db.episodes_at("u", keys) and len(opened.episodes_at("u", keys)) == 2
    digest = content_hash("Priya likes tacos.")
    assert opened.find_hash("u", "fact", digest) == from_db.find_hash("u", "fact", digest) is not None
    assert opened.find_hash("u", "episode", digest) is None
    assert [h.id for h in opened.all("u")] == [h.id for h in from_db.all("u")]


def test_writes_after_opening_stay_in_the_process_and_reach_the_file_later(local_store):
    fill(MemoryIndex(local_store, EMBEDDER))
    path = snapshot_path(index_root(local_store), local_store.db.name, "u")
    before = path.read_bytes()
    opened = MemoryIndex(local_store, EMBEDDER)
    hit = opened.search("u", "jazz", k=1, mode="lexical")[0]
    opened.forget("u", [hit.id])
    opened.insert(opened.new_doc("u", "fact", "Maya moved to Porto.", EMBEDDER.embed_one("Porto"), None))
    assert path.read_bytes() == before  # copy-on-write: the mapped file is untouched
    assert "Maya moved to Porto." in {h.text for h in opened.search("u", "Porto", k=3, mode="lexical")}
    assert hit.id not in {h.id for h in opened.search("u", "jazz", k=50, mode="lexical")}
    again = MemoryIndex(local_store, EMBEDDER)  # the file plus the change log since
    assert results(again) == results(opened) == results(MemoryIndex(local_store, EMBEDDER, index_files=False))


def test_the_file_names_no_user_and_holds_the_epoch_and_revision(local_store):
    fill(MemoryIndex(local_store, EMBEDDER), user="maya@example.com")
    path = snapshot_path(index_root(local_store), local_store.db.name, "maya@example.com")
    header = read_header(path)
    assert "maya" not in path.name and "maya@example.com" not in json.dumps(header)
    assert header["n"] == MIN_ROWS + 16 and header["settled"] >= 1 and len(header["epoch"]) == 32


def test_erasure_removes_the_file_and_a_file_of_an_erased_user_is_never_used(local_store):
    fill(MemoryIndex(local_store, EMBEDDER))
    path = snapshot_path(index_root(local_store), local_store.db.name, "u")
    stale = path.read_bytes()
    forget_user(local_store, "u")  # no index passed: as `--forget-user` in another process
    assert not path.exists()
    path.write_bytes(stale)  # a copy that survived somewhere (another machine's cache, a restored backup)
    index = MemoryIndex(local_store, EMBEDDER)
    assert index.search("u", "jazz", k=5) == [] and not path.exists()
    index.insert(index.new_doc("u", "fact", "A new start.", EMBEDDER.embed_one("A new start."), None))
    path.write_bytes(stale)  # another epoch now: still never used
    assert [h.text for h in MemoryIndex(local_store, EMBEDDER).search("u", "jazz start", k=5)] == ["A new start."]


def test_delete_user_removes_the_file(local_store):
    index = MemoryIndex(local_store, EMBEDDER)
    fill(index)
    path = snapshot_path(index_root(local_store), local_store.db.name, "u")
    assert path.exists() and index.delete_user("u") == MIN_ROWS + 16 and not path.exists()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_file_is_not_used(local_store, damage):
    fill(MemoryIndex(local_store, EMBEDDER))
    path = snapshot_path(index_root(local_store), local_store.db.name, "u")
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"x" * 5000, "empty": b""}[damage])
    assert open_snapshot(path, dim=EMBEDDER.dim, user_id="u") is None
    index = MemoryIndex(local_store, EMBEDDER)
    assert results(index) == results(MemoryIndex(local_store, EMBEDDER, index_files=False))
    assert index.stats["full_loads"] == 1 and read_header(path)["n"] == MIN_ROWS + 16  # written again


def test_mongomock_and_small_users_keep_no_file(mock_store, local_store):
    assert index_root(mock_store) is None
    small = MemoryIndex(local_store, EMBEDDER)
    fill(small, turns=10)
    assert small.stats["files_written"] == 0
    assert not snapshot_path(index_root(local_store), local_store.db.name, "u").exists()


def test_a_file_that_cannot_be_written_leaves_search_working(local_store, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(users_module, "write_snapshot", full_disk)
    index = MemoryIndex(local_store, EMBEDDER)
    with pytest.warns(RuntimeWarning, match="No space left on device.*GTE_DATA_DIR"):
        fill(index)
    assert index.cache.root is None and len(index.search("u", "jazz", k=3, mode="lexical")) == 3
    assert not snapshot_path(index_root(local_store), local_store.db.name, "u").exists()
