"""helpers.tools.settle: a failed turn's pending log entries are settled by its turn id and what the session
committed, never by text (issue 20)."""

from __future__ import annotations

from helpers.db.store import mongomock_store
from helpers.memory.fold import confirm_turns
from helpers.tools.consistency import check_consistency
from helpers.tools.settle import settle_failed_turn


def _exchange(store, text: str, turn: str, status: str = "pending") -> tuple[int, int]:
    user = store.append_log("u", "s", "user", text, status=status, extra={"turn": turn})
    reply = store.append_log(
        "u", "s", "assistant", f"reply to {text}", status=status, reply_to=user, extra={"turn": turn}
    )
    return user, reply


def _statuses(store) -> dict[int, str]:
    return {e["seq"]: e["status"] for e in store.logs_for("u", "s")}


def _commit(store, seqs, text, turn):
    session = store.load_session("u", "s")
    window = [
        {"role": "user", "content": text, "seq": seqs[0], "tokens": 3, "turn": turn},
        {"role": "assistant", "content": f"reply to {text}", "seq": seqs[1], "tokens": 4, "turn": turn},
    ]
    store.save_session("u", "s", session["version"], {"window": window, "commits": [turn]})


def test_committed_entries_become_ok_and_uncommitted_unanswered():
    store = mongomock_store()
    store.create_session("u", "s")
    committed = _exchange(store, "held", "t1")
    lost = _exchange(store, "not held", "t2")
    _commit(store, committed, "held", "t1")
    assert settle_failed_turn(store, "u", "s", "t1", "x") == {"ok": 2, "unanswered": 0}
    assert settle_failed_turn(store, "u", "s", "t2", "boom") == {"ok": 0, "unanswered": 2}
    statuses = _statuses(store)
    assert [statuses[s] for s in committed] == ["ok", "ok"] and [statuses[s] for s in lost] == ["unanswered"] * 2
    assert {e["error"] for e in store.logs_for("u", "s") if e["seq"] in lost} == {"boom"}
    assert check_consistency(store, "u", "s") == []


def test_two_writers_typing_the_same_yes_one_fails_the_other_commits():
    """The issue's race: settling by text marked the other writer's in-flight "yes" unanswered; by turn id it is
    left alone, and commits as 'ok'."""
    store = mongomock_store()
    store.create_session("u", "s")
    failed = _exchange(store, "yes", "ta")
    in_flight = _exchange(store, "yes", "tb")
    assert settle_failed_turn(store, "u", "s", "ta", "boom") == {"ok": 0, "unanswered": 2}
    statuses = _statuses(store)
    assert [statuses[s] for s in in_flight] == ["pending", "pending"]
    _commit(store, in_flight, "yes", "tb")
    confirm_turns(store, "u", "s", ["tb"])
    statuses = _statuses(store)
    assert [statuses[s] for s in in_flight] == ["ok", "ok"] and [statuses[s] for s in failed] == ["unanswered"] * 2
    assert check_consistency(store, "u", "s") == []


def test_a_settler_that_raced_ahead_of_a_commit_is_overruled_by_the_save():
    store = mongomock_store()
    store.create_session("u", "s")
    seqs = _exchange(store, "yes", "tc")
    assert settle_failed_turn(store, "u", "s", "tc", "thought dead") == {"ok": 0, "unanswered": 2}
    _commit(store, seqs, "yes", "tc")  # the turn was alive after all: its save is the commit point
    confirm_turns(store, "u", "s", ["tc"])
    assert set(_statuses(store).values()) == {"ok"}
    assert settle_failed_turn(store, "u", "s", None, "x") == {"ok": 0, "unanswered": 0}
