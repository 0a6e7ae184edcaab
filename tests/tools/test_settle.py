"""helpers.tools.settle: a failed turn's pending log entries are settled by what the session holds, and nothing else."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from helpers.tools.consistency import check_consistency
from helpers.tools.settle import settle_failed_turn
from helpers.db.store import mongomock_store


def _exchange(store, text: str, status: str = "pending") -> tuple[int, int]:
    user = store.append_log("u", "s", "user", text, status=status)
    reply = store.append_log("u", "s", "assistant", f"reply to {text}", status=status, reply_to=user)
    return user, reply


def _statuses(store) -> dict[int, str]:
    return {e["seq"]: e["status"] for e in store.logs_for("u", "s")}


def test_committed_entries_become_ok_and_uncommitted_unanswered():
    store = mongomock_store()
    store.create_session("u", "s")
    since = datetime.now(timezone.utc) - timedelta(seconds=1)
    committed = _exchange(store, "held")
    lost = _exchange(store, "not held")
    session = store.load_session("u", "s")
    window = [{"role": "user", "content": "held", "seq": committed[0], "tokens": 3},
              {"role": "assistant", "content": "reply to held", "seq": committed[1], "tokens": 4}]
    store.save_session("u", "s", session["version"], {"window": window})
    assert settle_failed_turn(store, "u", "s", "held", since, "x") == {"ok": 2, "unanswered": 0}
    assert settle_failed_turn(store, "u", "s", "not held", since, "boom") == {"ok": 0, "unanswered": 2}
    statuses = _statuses(store)
    assert [statuses[s] for s in committed] == ["ok", "ok"] and [statuses[s] for s in lost] == ["unanswered"] * 2
    assert {e["error"] for e in store.logs_for("u", "s") if e["seq"] in lost} == {"boom"}
    assert check_consistency(store, "u", "s") == []


def test_other_turns_in_flight_are_left_alone():
    store = mongomock_store()
    store.create_session("u", "s")
    other_text = _exchange(store, "another writer's turn")
    older = _exchange(store, "same text")
    since = datetime.now(timezone.utc) + timedelta(seconds=5)  # the failed turn started after `older` was written
    assert settle_failed_turn(store, "u", "s", "same text", since, "x") == {"ok": 0, "unanswered": 0}
    assert settle_failed_turn(store, "u", "s", "no such text", since - timedelta(minutes=1), "x") == \
        {"ok": 0, "unanswered": 0}
    assert set(_statuses(store).values()) == {"pending"}
    assert other_text and older
