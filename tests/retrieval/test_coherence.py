"""Coherence across processes (helpers.retrieval.changes, users): two MemoryIndex objects on one store stand for two
processes that share nothing but the database. A write by one — insert, update, supersede, delete, erasing the user —
is seen by the other at its next request, reading only what changed; a write announced by a writer that died before
writing is given up; a reader too far behind reads the user again."""

from __future__ import annotations

import os
import uuid

import pytest
from _embedders import HashEmbedder

from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory.forget import forget_user
from helpers.retrieval import MemoryIndex
from helpers.retrieval import changes as changes_module
from helpers.retrieval.changes import announce, read_head
from helpers.retrieval.snapshot import remove_database_files

EMBEDDER = HashEmbedder()


def add(index: MemoryIndex, user: str, text: str) -> str:
    return index.insert(index.new_doc(user, "fact", text, EMBEDDER.embed_one(text), None))


def texts(index: MemoryIndex, user: str = "u", query: str = "memory") -> set[str]:
    return {h.text for h in index.search(user, query, k=50, mode="lexical")}


@pytest.fixture(
    params=[
        "mongomock",
        "local",
        pytest.param(
            "mongodb",
            marks=[
                pytest.mark.mongodb,
                pytest.mark.skipif(not os.environ.get("MONGODB_URI"), reason="MONGODB_URI is not set"),
            ],
        ),
    ]
)
def store(request):
    if request.param != "mongodb":
        yield request.getfixturevalue("mock_store" if request.param == "mongomock" else "local_store")
        return
    settings = load_settings().with_(mongodb_uri=os.environ["MONGODB_URI"], db_name=f"gte_test_{uuid.uuid4().hex[:8]}")
    with open_store(settings, fallback=False) as real:
        try:
            yield real
        finally:
            real.client.drop_database(real.db.name)
            remove_database_files(real)


def test_every_kind_of_write_by_another_process_is_seen_at_the_next_request(store):
    reader, writer = MemoryIndex(store, EMBEDDER), MemoryIndex(store, EMBEDDER)
    first = add(writer, "u", "first memory")
    assert texts(reader) == {"first memory"}  # opened
    second = add(writer, "u", "second memory")
    assert texts(reader) == {"first memory", "second memory"}  # an insert
    writer.forget("u", [second])
    assert texts(reader) == {"first memory"}  # an update (superseded / forgotten)
    writer.touch("u", first)
    assert [h.seen_count for h in reader.search("u", "first memory", k=1, mode="lexical")] == [2]
    third = add(writer, "u", "third memory")
    assert writer.delete("u", [third]) == 1
    assert texts(reader) == {"first memory"}  # a delete, never invalidated by hand
    assert reader.stats["reloads"] == 0 and reader.stats["full_loads"] == 1


def test_a_reader_reads_only_what_changed(store):
    reader, writer = MemoryIndex(store, EMBEDDER), MemoryIndex(store, EMBEDDER)
    for i in range(40):
        add(writer, "u", f"memory number {i}")
    assert len(texts(reader)) == 40
    before = reader.stats["changes_read"]
    add(writer, "u", "memory number 40")
    writer.forget("u", [add(writer, "u", "memory number 41")])
    assert len(texts(reader)) == 41
    assert reader.stats["changes_read"] - before == 2  # two memories read again, not 42
    texts(reader)
    assert reader.stats["changes_read"] - before == 2  # nothing changed: nothing read


def test_erasing_the_user_elsewhere_drops_them_at_the_next_request(store):
    reader, writer = MemoryIndex(store, EMBEDDER), MemoryIndex(store, EMBEDDER)
    add(writer, "u", "the secret memory is zebra42")
    add(writer, "bob", "bob's memory")
    assert texts(reader) == {"the secret memory is zebra42"} and texts(reader, "bob") == {"bob's memory"}
    forget_user(store, "u")  # as `--forget-user` in another process: no index is told
    assert reader.search("u", "secret memory zebra42", k=5) == []
    assert texts(reader, "bob") == {"bob's memory"}
    add(writer, "u", "a new memory after the erasure")  # the user starts again: a new epoch
    assert texts(reader) == {"a new memory after the erasure"}


def test_delete_user_through_one_index_is_seen_by_the_other(store):
    reader, writer = MemoryIndex(store, EMBEDDER), MemoryIndex(store, EMBEDDER)
    add(writer, "u", "first memory")
    assert texts(reader) == {"first memory"}
    assert writer.delete_user("u") == 1
    assert texts(reader) == set() and read_head(store, "u") is None


def test_a_write_announced_before_it_lands_is_read_when_it_lands(mock_store):
    """The writer's two steps (announce, then write) seen from between them: the reader keeps the entry open."""
    reader, writer = MemoryIndex(mock_store, EMBEDDER), MemoryIndex(mock_store, EMBEDDER)
    add(writer, "u", "first memory")
    assert texts(reader) == {"first memory"}
    doc = writer.new_doc("u", "fact", "late memory", EMBEDDER.embed_one("late memory"), None)
    doc["_id"] = __import__("bson").ObjectId()
    epoch, first, last = announce(mock_store, "u", [doc["_id"]], "put")
    assert texts(reader) == {"first memory"}  # announced, not written yet
    mock_store.memories.insert_one({**doc, "rev": last})
    assert texts(reader) == {"first memory", "late memory"}


def test_a_write_whose_writer_died_is_given_up_after_settle_time(mock_store, monkeypatch):
    reader, writer = MemoryIndex(mock_store, EMBEDDER), MemoryIndex(mock_store, EMBEDDER)
    add(writer, "u", "first memory")
    texts(reader)
    announce(mock_store, "u", [__import__("bson").ObjectId()], "put")  # and then the writer died
    texts(reader)
    before = reader.stats["changes_read"]
    texts(reader)
    assert reader.stats["changes_read"] == before + 1  # still open: read again
    clock = __import__("time").time() + changes_module.SETTLE_S + 1
    monkeypatch.setattr(changes_module.time, "time", lambda: clock)
    texts(reader)
    texts(reader)
    assert reader.stats["changes_read"] == before + 2  # given up: no longer read
    add(writer, "u", "second memory")
    assert texts(reader) == {"first memory", "second memory"}


def test_a_reader_further_behind_than_the_log_reads_the_user_again(mock_store, monkeypatch):
    monkeypatch.setattr(changes_module, "LOG_KEEP", 8)
    monkeypatch.setattr(changes_module, "PRUNE_EVERY", 2)
    reader, writer = MemoryIndex(mock_store, EMBEDDER), MemoryIndex(mock_store, EMBEDDER)
    add(writer, "u", "memory 0")
    texts(reader)
    for i in range(1, 20):
        add(writer, "u", f"memory {i}")
    assert mock_store.db[changes_module.CHANGES].count_documents({"user_id": "u"}) < 20  # pruned
    assert len(texts(reader)) == 20 and reader.stats["reloads"] == 1


def test_memories_written_before_revisions_existed_are_read_and_then_followed(mock_store):
    """Memories stored by an older version (no revision document): read in full, and the first versioned write
    makes every reader read the user again."""
    old = MemoryIndex(mock_store, EMBEDDER)
    doc = old.new_doc("u", "fact", "legacy memory", EMBEDDER.embed_one("legacy memory"), None)
    mock_store.memories.insert_one(doc)  # as an older version wrote it
    reader, writer = MemoryIndex(mock_store, EMBEDDER), MemoryIndex(mock_store, EMBEDDER)
    assert texts(reader) == {"legacy memory"}
    add(writer, "u", "new memory")
    assert texts(reader) == {"legacy memory", "new memory"}


def test_own_writes_need_no_reading_back(mock_store):
    index = MemoryIndex(mock_store, EMBEDDER)
    add(index, "u", "first memory")
    texts(index)
    for i in range(5):
        add(index, "u", f"memory {i}")
    index.forget("u", [add(index, "u", "gone memory")])
    assert len(texts(index)) == 6 and index.stats["changes_read"] == 0 and index.stats["reloads"] == 0
