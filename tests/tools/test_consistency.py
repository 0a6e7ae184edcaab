"""helpers.tools.consistency: the checker passes real sessions and flags each kind of damage."""

from __future__ import annotations

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory
from helpers.tools.consistency import check_consistency

FILLER = "What should we do near Griffith Park on day {i}, maybe something with a view?"


@pytest.fixture(scope="module")
def healthy():
    """A mongomock store holding one session with a window, a summary and an unanswered turn."""
    settings = load_settings({})
    store = mongomock_store()
    memory = BoundedMemory(
        get_client(settings, max_retries=0), settings, store=store, user_id="u", session_id="s", budget=200
    )
    memory.turn("My favorite color is teal.")
    for i in range(5):
        memory.turn(FILLER.format(i=i))
    return store


def _copy(store):
    """A private copy of the healthy store (each test damages its own)."""
    other = mongomock_store()
    for name in ("sessions", "logs"):
        docs = list(store.db[name].find({}, {"_id": 0}))
        if docs:
            other.db[name].insert_many(docs)
    return other


def test_a_real_session_is_consistent(healthy):
    session = healthy.load_session("u", "s")
    assert session["summary_covers"]["count"] > 0 and session["window"]
    assert check_consistency(healthy, "u", "s", budget=200) == []
    assert check_consistency(healthy, "nobody", "s") == []


def _damage(store, **fields):
    session = store.load_session("u", "s")
    assert store.save_session("u", "s", session["version"], fields) is not None


def test_lost_message_is_flagged(healthy):
    store = _copy(healthy)
    window = store.load_session("u", "s")["window"]
    _damage(store, window=window[2:])  # an acknowledged exchange vanished from the session
    problems = check_consistency(store, "u", "s")
    assert any("neither in the window" in p for p in problems) and any("lost" in p for p in problems)


def test_duplicated_message_is_flagged(healthy):
    store = _copy(healthy)
    window = store.load_session("u", "s")["window"]
    _damage(store, pending=window[:2])
    problems = check_consistency(store, "u", "s")
    assert any("more than once" in p for p in problems) and any("double-counted" in p for p in problems)


def test_edited_window_message_is_flagged(healthy):
    store = _copy(healthy)
    window = store.load_session("u", "s")["window"]
    window[0] = {**window[0], "content": "something the user never said"}
    _damage(store, window=window)
    assert any("differs from its log entry" in p for p in check_consistency(store, "u", "s"))


def test_window_starting_with_the_assistant_or_over_budget_is_flagged(healthy):
    store = _copy(healthy)
    window = store.load_session("u", "s")["window"]
    _damage(store, window=window[1:])
    assert any("not a user turn" in p for p in check_consistency(store, "u", "s"))
    store = _copy(healthy)
    assert len(store.load_session("u", "s")["window"]) >= 4  # two exchanges or more
    assert any("budget" in p for p in check_consistency(store, "u", "s", budget=5))


def test_unanswered_turn_in_the_session_is_flagged(healthy):
    store = _copy(healthy)
    seq = store.append_log("u", "s", "user", "never answered", status="unanswered")
    session = store.load_session("u", "s")
    _damage(store, window=[*session["window"], {"role": "user", "content": "never answered", "seq": seq, "tokens": 3}])
    assert any("'unanswered'" in p for p in check_consistency(store, "u", "s"))


def test_gaps_and_duplicate_seqs_are_flagged(healthy):
    store = _copy(healthy)
    store.logs.drop_indexes()  # only a broken store could hold these; the unique index forbids them
    store.logs.delete_one({"user_id": "u", "session_id": "s", "seq": 3})
    dup = store.logs.find_one({"user_id": "u", "session_id": "s", "seq": 4}, {"_id": 0})
    store.logs.insert_one(dup)
    problems = check_consistency(store, "u", "s")
    assert any("duplicate log seqs: [4]" in p for p in problems)
    assert any("not contiguous" in p and "[3]" in p for p in problems)


def test_summary_coverage_that_does_not_add_up_is_flagged(healthy):
    store = _copy(healthy)
    covers = store.load_session("u", "s")["summary_covers"]
    _damage(store, summary_covers={**covers, "count": covers["count"] - 2})
    assert any("lost" in p for p in check_consistency(store, "u", "s"))
    _damage(store, summary_covers={**covers, "count": covers["count"] + 2})
    assert any("double-counted" in p for p in check_consistency(store, "u", "s"))


def test_pending_entries_are_in_flight_not_lost(healthy):
    store = _copy(healthy)
    store.append_log("u", "s", "user", "the process died before the commit", status="pending")
    assert check_consistency(store, "u", "s") == []
    store.set_log_status("u", "s", [store.count_logs("u", "s")], "ok")  # acknowledged but not in the session
    assert any("neither in the window" in p for p in check_consistency(store, "u", "s"))
