"""Plumbing: settle the log entries of a turn that failed, by its turn id: 'ok' if the session committed it, else 'unanswered'."""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers.memory.fold import committed_turns, confirm_turns

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = ["settle_failed_turn", "message_kept"]


def settle_failed_turn(store: Store, user_id: str, session_id: str, turn: str | None, error: str) -> dict[str, int]:
    """After turn `turn` raised: mark its still-'pending' entries by what the saved session says.

    The session save is the commit point: a turn it committed (listed in `commits` or held in the window or
    pending list, helpers.memory.fold.committed_turns) is 'ok'; otherwise its entries are 'unanswered' with
    `error` (the user's message stays in the log). Only entries carrying this turn id are touched, never another
    writer's entries with the same text. Returns how many entries became 'ok' / 'unanswered'.
    """
    done = {"ok": 0, "unanswered": 0}
    if not turn:
        return done
    if turn in committed_turns(store.load_session(user_id, session_id)):
        done["ok"] = confirm_turns(store, user_id, session_id, [turn])
        return done
    result = store.logs.update_many(
        {"user_id": user_id, "session_id": session_id, "turn": turn, "status": "pending"},
        {"$set": {"status": "unanswered", "error": error[:500]}},
    )
    done["unanswered"] = result.modified_count
    return done


def message_kept(store: Store, user_id: str, session_id: str, turn: str | None) -> bool:
    """True if the user's message of turn `turn` is in the log (a write that failed, e.g. on a full disk, is not)."""
    if not turn:
        return False
    return store.logs.count_documents({"user_id": user_id, "session_id": session_id, "turn": turn, "role": "user"}) > 0
