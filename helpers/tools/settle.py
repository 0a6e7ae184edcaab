"""Plumbing: settle the log entries of a turn that failed after its reply: 'ok' if the session holds them, else 'unanswered'."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from helpers.db.store import Store

__all__ = ["settle_failed_turn"]


def _aware(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _held(session: dict | None) -> tuple[set, tuple[int, int] | None]:
    """Seqs the session holds (window and pending) and the range its summary covers."""
    session = session or {}
    held = {m.get("seq") for m in [*(session.get("window") or []), *(session.get("pending") or [])]}
    covers = session.get("summary_covers") or {}
    first, last = covers.get("first_seq"), covers.get("last_seq")
    return held, ((first, last) if covers.get("count") and first is not None and last is not None else None)


def settle_failed_turn(store: "Store", user_id: str, session_id: str, text: str, since: datetime,
                       error: str) -> dict[str, int]:
    """After `text`'s turn raised: mark its still-'pending' entries (written since `since`) by what the session holds.

    The session save is the commit point: entries it holds (window, pending, or the summary's coverage) are
    'ok'; entries it does not hold are 'unanswered' with `error` (the user's message stays in the log, and
    never enters the session later). Only this turn's entries are touched: same user text, written after
    `since`, still 'pending', and the replies to them. Returns how many entries became 'ok' / 'unanswered'.
    """
    key = {"user_id": user_id, "session_id": session_id}
    since = _aware(since)
    users = [e for e in store.logs.find({**key, "role": "user", "status": "pending"}, {"_id": 0})
             if e.get("content") == text and (_aware(e.get("created_at")) or since) >= since]
    done = {"ok": 0, "unanswered": 0}
    if not users:
        return done
    seqs = [e["seq"] for e in users]
    replies: dict[int, list[int]] = {}
    for e in store.logs.find({**key, "role": "assistant", "status": "pending", "reply_to": {"$in": seqs}}, {"_id": 0}):
        replies.setdefault(e["reply_to"], []).append(e["seq"])
    held, covered = _held(store.load_session(user_id, session_id))
    for seq in seqs:
        exchange = [seq, *replies.get(seq, [])]
        committed = seq in held or (covered is not None and covered[0] <= seq <= covered[1])
        if committed:
            done["ok"] += store.set_log_status(user_id, session_id, exchange, "ok", only_if_status="pending")
        else:
            done["unanswered"] += store.set_log_status(user_id, session_id, exchange, "unanswered",
                                                       error=error[:500], only_if_status="pending")
    return done
