"""Two real processes on the local server: one writes, updates, deletes and erases a user; the other, holding that user's
memories all along, sees each change at its very next search (helpers.retrieval.changes) and never serves an erased
or deleted memory once the change is committed."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest

from helpers.retrieval import MemoryIndex

EMBEDDER_CODE = '''
import hashlib
import numpy as np
import pytest


class HashEmbedder:
    """A fast deterministic stand-in: a pseudo-random unit vector per distinct text (no meaning at all)."""

    name = "hash-embedder"
    dim = 384

    def embed(self, texts):
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "little")
            row = np.random.default_rng(seed).normal(size=self.dim).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_one(self, text):
        return self.embed([text])[0]
'''

WRITER = (
    EMBEDDER_CODE
    + """
import json, sys
from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.retrieval import MemoryIndex

store = open_store(load_settings().with_(db_name=sys.argv[1], mongodb_uri=None), fallback=False)
embedder = HashEmbedder()
index = MemoryIndex(store, embedder)
for line in sys.stdin:
    command = json.loads(line)
    op, user = command["op"], command.get("user", "u")
    if op == "add":
        text = command["text"]
        out = index.insert(index.new_doc(user, "fact", text, embedder.embed_one(text), None))
    elif op == "forget":
        out = index.forget(user, [command["id"]])
    elif op == "touch":
        out = index.touch(user, command["id"])
    elif op == "delete":
        out = index.delete(user, [command["id"]])
    elif op == "delete_user":
        out = index.delete_user(user)
    elif op == "forget_user":
        from helpers.memory.forget import forget_user  # imports the whole memory layer (and the anthropic SDK)

        out = forget_user(store, user)["total"]
    print(json.dumps(out), flush=True)
"""
)

exec(EMBEDDER_CODE)  # the same stand-in embedder in this process


class Writer:
    """A second process writing through its own MemoryIndex, one JSON command per line."""

    def __init__(self, store):
        self.process = subprocess.Popen(
            [sys.executable, "-c", WRITER, store.db.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def __call__(self, **command):
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, self.process.stderr.read()
        return json.loads(line)

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=60)


def seen(reader: MemoryIndex, query: str = "memory") -> set[str]:
    return {h.text for h in reader.search("u", query, k=20, mode="lexical")}


def test_a_second_process_sees_every_change_at_its_next_search(local_store):
    reader = MemoryIndex(local_store, HashEmbedder())  # noqa: F821 (defined by the exec above)
    write = Writer(local_store)
    try:
        first = write(op="add", text="first memory")
        assert seen(reader) == {"first memory"}  # the reader now holds the user
        second = write(op="add", text="second memory")
        assert seen(reader) == {"first memory", "second memory"}  # an insert
        assert write(op="forget", id=second) == 1
        assert seen(reader) == {"first memory"}  # an update: forgotten (superseded) is hidden
        write(op="touch", id=first)
        assert [h.seen_count for h in reader.search("u", "first", k=1, mode="lexical")] == [2]
        assert write(op="delete", id=first) == 1
        assert seen(reader) == set()  # a hard delete
        write(op="add", text="the secret memory is zebra42")
        assert seen(reader, "zebra42") == {"the secret memory is zebra42"}
        assert write(op="delete_user") == 2  # the forgotten memory was kept for the record until now
        assert reader.search("u", "secret memory zebra42", k=5) == []  # erased: never served again
        assert reader.stats["reloads"] == 1 and reader.stats["full_loads"] == 2  # opened, then read again once
    finally:
        write.close()


@pytest.mark.slow  # the writer imports the whole memory layer (the anthropic SDK): several seconds
def test_forget_user_in_another_process_is_seen_at_the_next_search(local_store):
    reader = MemoryIndex(local_store, HashEmbedder())  # noqa: F821
    write = Writer(local_store)
    try:
        write(op="add", text="the secret memory is zebra42")
        write(op="add", user="bob", text="bob's memory")
        assert seen(reader, "zebra42") == {"the secret memory is zebra42"}
        assert write(op="forget_user") > 0
        assert reader.search("u", "secret memory zebra42", k=5) == []
        assert {h.text for h in reader.search("bob", "memory", k=5, mode="lexical")} == {"bob's memory"}
    finally:
        write.close()


def test_the_embedder_code_is_the_same_here_and_there():
    vector = HashEmbedder().embed_one("x")  # noqa: F821
    seed = int.from_bytes(hashlib.sha256(b"x").digest()[:8], "little")
    row = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    assert np.array_equal(vector, row / np.linalg.norm(row))
