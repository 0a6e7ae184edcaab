"""Forget me (issue 21): one call erases a user in every collection, the CLI's --forget-user too; others untouched."""

import json
import os
import subprocess
import sys

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import VectorMemory
from helpers.memory.forget import documents_of, forget_user
from helpers.memory.importer import import_turns
from helpers.memory.transcript import read_transcript

LINES = [
    "(conversation on 8 May, 2023)",
    '{"role": "user", "content": "My sister Ana lives in Lisbon."}',
    '{"role": "assistant", "content": "Lisbon is lovely."}',
]


def _fill(client, settings, store, user):
    """A user with a session, logs, facts, episodes and imported turns, and a search that fills the index cache."""
    memory = VectorMemory(
        client, settings, store=store, user_id=user, session_id="s1", budget=200, summary_max_tokens=40
    )
    memory.turn("My name is Maya and my flight number is UA1432.")
    memory.turn("I live in Portland.")
    imported = VectorMemory(
        client,
        settings,
        store=store,
        user_id=user,
        session_id="s2",
        context_budget=2000,
        index=memory.long_term.index,
        facts=memory.long_term.facts,
    )
    import_turns(imported, read_transcript(LINES))
    assert memory.long_term.index.search(user, "flight number", k=3)  # the cache now holds this user
    return memory


def test_forget_user_leaves_nothing_of_that_user_in_any_collection_and_others_untouched():
    settings = load_settings({})
    client, store = get_client(settings), mongomock_store("forget")
    maya = _fill(client, settings, store, "maya")
    _fill(client, settings, store, "bob")
    before = documents_of(store, "bob")
    assert set(before) >= {"sessions", "logs", "memories"} and all(n > 0 for n in before.values())
    assert store.memories.count_documents({"user_id": "maya", "kind": "fact"}) > 0

    result = forget_user(store, "maya", memories=[maya])

    assert documents_of(store, "maya") == {name: 0 for name in store.db.list_collection_names()}
    assert result["total"] > 0 and result["deleted"]["logs"] > 0 and result["deleted"]["sessions"] == 2
    assert documents_of(store, "bob") == before
    assert maya.long_term.index.search("maya", "flight number", k=3) == []  # the in-process cache is gone too
    assert maya.long_term.index.search("bob", "flight number", k=3)


def test_forget_user_rejects_a_query_shaped_id():
    store = mongomock_store("forget-bad")
    store.logs.insert_one({"user_id": "bob", "session_id": "s", "seq": 1})
    with pytest.raises(ValueError):
        forget_user(store, {"$ne": None})
    assert store.logs.count_documents({}) == 1


def _chat(*args, stdin=""):
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run(
        [sys.executable, "-m", "helpers.chat", *args], input=stdin.encode(), capture_output=True, timeout=300, env=env
    )


@pytest.mark.slow  # CLI subprocesses (seconds): the full set runs it
def test_cli_forget_user_checks_its_argument_before_touching_the_store():
    # the end-to-end erasure (every database, the data dir's bytes, a running chat) is tests/tools/test_erasure.py
    bad = _chat("--forget-user", "two words")
    assert bad.returncode == 2 and "--forget-user" in bad.stderr.decode()


def test_on_mongodb_uri_the_cli_says_what_only_the_operator_can_erase(monkeypatch, capsys):
    from helpers.db import store as store_mod
    from helpers.tools import erase

    store = mongomock_store("forget-uri")
    store.kind = "uri"
    store.logs.insert_one({"user_id": "maya", "session_id": "s", "seq": 1, "content": "hi"})
    monkeypatch.setattr(store_mod, "open_store", lambda settings, fallback: store)
    monkeypatch.setattr(store, "close", lambda: None)
    assert erase.forget_command(load_settings({}), "maya", str) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["left"] == 0 and report["deleted"]["logs"] == 1 and "files" not in report
    for must in ("forget-uri", "oplog", "replSetResizeOplog", "backups", "other databases", "GTE_DB_NAME"):
        assert must in report["note"] and must in err, must
