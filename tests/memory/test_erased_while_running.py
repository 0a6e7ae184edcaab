"""A running chat never brings an erased user back (issue 31): forget the user while their chat runs (as another
process would: no handle on the chat), and the next turn starts afresh; work queued or in flight is not written."""

from __future__ import annotations

import hashlib
import json
import re
import threading

import numpy as np
import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import TurnError, VectorMemory
from helpers.memory.forget import forget_user

SECRET = "QX7731"


class WordEmbedder:
    """A tiny deterministic bag-of-words embedder (no model download): shared words, similar vectors."""

    name, dim = "test-word-embedder", 64

    def embed(self, texts):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    def embed_one(self, text):
        return self.embed([text])[0]


def _chat(store, user_id: str = "maya", **options) -> VectorMemory:
    settings = load_settings({})
    return VectorMemory(
        get_client(settings, max_retries=0),
        settings,
        store=store,
        user_id=user_id,
        session_id="s1",
        budget=300,
        summary_max_tokens=60,
        embedder=WordEmbedder(),
        **options,
    )


def _everything_of(store, user: str) -> str:
    """Every document of `user` in every collection, as text (the secret must not be in it)."""
    return json.dumps(
        [doc for name in store.db.list_collection_names() for doc in store.db[name].find({"user_id": user})],
        default=str,
    )


def test_the_next_turn_after_an_erasure_starts_afresh_and_writes_nothing_back():
    store = mongomock_store("erased")
    chat = _chat(store)
    chat.turn(f"My locker code is {SECRET}.")
    chat.turn("I live in Portland and I like tea.")
    assert SECRET in _everything_of(store, "maya") and SECRET in chat.turn("What is my locker code?").reply
    bob = _chat(store, user_id="bob")
    bob.turn("My bike lock code is 9090.")

    forget_user(store, "maya")  # as --forget-user in another process: nothing tells this chat

    result = chat.turn("What is my locker code?")
    assert SECRET not in result.reply, result.reply
    assert SECRET not in json.dumps(result.request, default=str)  # no window, summary or memory of it was sent
    assert chat.stats["erased"] == 1
    assert SECRET not in _everything_of(store, "maya")
    assert all(SECRET not in hit.text for hit in chat.long_term.index.search("maya", "locker code", k=5))
    assert "9090" in _everything_of(store, "bob")  # another user of the same store is untouched


def test_work_queued_before_an_erasure_is_not_written_after_it():
    store = mongomock_store("erased-background")
    chat = _chat(store, background=True)
    gate, started = threading.Event(), threading.Event()
    remember = chat.long_term.facts.remember

    def slow_remember(*args, **kwargs):  # the extraction is in flight when the user is erased
        started.set()
        gate.wait(10)
        return remember(*args, **kwargs)

    chat.long_term.facts.remember = slow_remember
    chat.turn(f"My locker code is {SECRET}.")
    assert started.wait(10)
    forget_user(store, "maya")
    gate.set()
    chat.long_term.worker.drain(10)
    assert store.memories.count_documents({"user_id": "maya"}) == 0, _everything_of(store, "maya")
    assert chat.stats["memory_erased"] >= 1
    chat.close()


def test_a_turn_in_flight_during_the_erasure_keeps_nothing(monkeypatch):
    store = mongomock_store("erased-mid-turn")
    chat = _chat(store)
    chat.turn(f"My locker code is {SECRET}.")
    real_call = chat._call

    def erase_then_answer(request, purpose="chat"):  # the erasure lands while the model is answering
        if purpose == "chat":
            forget_user(store, "maya")
        return real_call(request, purpose)

    monkeypatch.setattr(chat, "_call", erase_then_answer)
    with pytest.raises(TurnError, match="erased while the turn ran"):
        chat.turn("Remind me: what is my locker code?")
    assert SECRET not in _everything_of(store, "maya")
    assert store.logs.count_documents({"user_id": "maya"}) == 0  # the turn built on the erased data is not kept
    monkeypatch.undo()
    assert SECRET not in chat.turn("What is my locker code?").reply
