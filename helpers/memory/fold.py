"""Session bookkeeping of a summary fold, its re-application after a conflict, the log for a rebuild. Taught in 04_bounded_memory_mongodb, "Restart and continue"."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from helpers.conversation import starts_exchange, text_of
from helpers.memory.pending import FoldOutcome

__all__ = [
    "session_id_from_file",
    "summary_fields",
    "rebase",
    "committed_exchanges",
    "new_turn_id",
    "confirm_turns",
    "held_seqs",
    "committed_turns",
    "settle_interrupted",
]


def session_id_from_file(path: str | Path) -> str:
    """The session id kept in a `.session_id` file; a missing file gets a new id written to it.

    Deleting the file therefore starts a new conversation without touching the database.
    """
    path = Path(path)
    if path.exists():
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
    value = uuid.uuid4().hex
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value + "\n", encoding="utf-8")
    return value


def new_turn_id() -> str:
    """The id every log entry of one exchange carries (`turn`): settling, rebuild and checks go by it, never by text."""
    return uuid.uuid4().hex[:16]


def held_seqs(session: dict | None) -> set:
    """Seqs the session holds in its window and pending list."""
    session = session or {}
    return {m.get("seq") for m in [*(session.get("window") or []), *(session.get("pending") or [])]}


def committed_turns(session: dict | None) -> set:
    """Turn ids the session has committed (the save is the commit point): the ones listed in `commits` (saved,
    their log entries perhaps not yet marked 'ok') and those of the messages it holds."""
    session = session or {}
    held = [m.get("turn") for m in [*(session.get("window") or []), *(session.get("pending") or [])]]
    return {t for t in [*(session.get("commits") or []), *held] if t}


def confirm_turns(
    store, user_id: str, session_id: str, turns, also: dict | None = None, entries: int | None = None
) -> int:
    """Mark every log entry of the committed `turns` 'ok' (also one a settler marked 'unanswered' while the turn
    was still in flight: the session save decides, not the settler). Idempotent; returns how many matched.

    `also`: more fields for those entries (long-term memory's "done" mark, helpers.memory.remember), set in the same
    update while all `entries` of them are still pending; if some are not (a settler confirmed them first), a second
    update sets them where they are not set yet."""
    turns = [t for t in turns if t]
    if not turns:
        return 0
    key = {"user_id": user_id, "session_id": session_id, "turn": {"$in": turns}}
    result = store.logs.update_many(
        {**key, "status": {"$in": ["pending", "unanswered"]}}, {"$set": {"status": "ok", "error": None, **(also or {})}}
    )
    if also and (entries is None or result.matched_count < entries):
        store.logs.update_many({**key, **{k: {"$ne": v} for k, v in also.items()}}, {"$set": also})
    return result.matched_count


def summary_fields(
    session: dict, out: FoldOutcome, known: list[str], count_base: Callable[[str], int]
) -> tuple[dict, dict, list[int]]:
    """The session fields to save after folding `session`'s pending turns (`out`); returns (fields, info, seqs left out).

    `known` is every fact the summary is now responsible for; `count_base(summary)` counts framing + persona +
    that summary (called only for the first summary: later ones move the stored count by the summary's change).
    """
    info: dict = {}
    fields: dict = {}
    if out.merged:
        covers = session.get("summary_covers") or {"first_seq": None, "last_seq": None, "count": 0}
        seqs = [m["seq"] for m in out.merged if m.get("seq") is not None]
        first = min([s for s in [covers.get("first_seq"), *seqs] if s is not None], default=None)
        last = max([s for s in [covers.get("last_seq"), *seqs] if s is not None], default=None)
        base = session.get("base_tokens")
        final = out.results[-1]  # it checked every fact the summary is responsible for, old and new
        fields.update(
            {
                "summary": out.summary,
                "summary_tokens": out.summary_tokens,
                "retention": final.retention,
                "missing": final.missing,
                "facts": known,
                "summary_covers": {"first_seq": first, "last_seq": last, "count": covers["count"] + len(out.merged)},
            }
        )
        # The system prompt grew or shrank by the summary's change; the first summary needs one count.
        fields["base_tokens"] = (
            (base + out.summary_tokens - (session.get("summary_tokens") or 0))
            if session.get("summary") and base is not None
            else count_base(out.summary)
        )
        info["summary_result"] = {
            "calls": out.calls,
            "retention": final.retention,
            "missing": final.missing,
            "merged": len(out.merged),
        }
    left_out = [m["seq"] for m in out.unsummarised if m.get("seq") is not None]
    if out.merged or out.unsummarised:
        fields["pending"] = out.pending
    if out.unsummarised or out.warning:
        fields["unsummarised"] = (session.get("unsummarised") or 0) + len(out.unsummarised)
        fields["summary_warning"] = out.warning
    elif out.merged and session.get("summary_warning"):
        fields["summary_warning"] = None
    return fields, info, left_out


def rebase(fields: dict, read: dict, current: dict, handled: set) -> dict | None:
    """Re-apply a summary step computed on session `read` to the newer `current`, or None if it no longer applies."""
    if "summary" in fields and (
        current.get("summary") != read.get("summary") or current.get("summary_covers") != read.get("summary_covers")
    ):
        return None  # another writer merged meanwhile: our summary is stale
    now_pending = current.get("pending") or []
    if not handled <= {m.get("seq") for m in now_pending}:
        return None
    new = {**fields, "pending": [m for m in now_pending if m.get("seq") not in handled]}
    if "base_tokens" in fields and read.get("base_tokens") is not None and current.get("base_tokens") is not None:
        new["base_tokens"] = current["base_tokens"] + fields["base_tokens"] - read["base_tokens"]
    if "unsummarised" in fields:
        new["unsummarised"] = (
            (current.get("unsummarised") or 0) + fields["unsummarised"] - (read.get("unsummarised") or 0)
        )
    return new


def settle_interrupted(store, user_id: str, session_id: str) -> dict:
    """On start: entries a dead process left 'pending'. Those of a turn the session committed become 'ok'; the
    others (the process died before its save) become 'unanswered'. Returns the counts."""
    session = store.load_session(user_id, session_id)
    turns, held = committed_turns(session), held_seqs(session)
    ok = confirm_turns(store, user_id, session_id, turns)
    ok += store.set_log_status(
        user_id, session_id, sorted(s for s in held if s is not None), "ok", only_if_status="pending"
    )
    stale = [
        e["seq"]
        for e in store.logs.find(
            {"user_id": user_id, "session_id": session_id, "status": "pending"}, {"seq": 1, "turn": 1}
        )
        if e.get("turn") not in turns and e["seq"] not in held
    ]
    lost = store.set_log_status(
        user_id,
        session_id,
        stale,
        "unanswered",
        only_if_status="pending",
        error="interrupted: the process ended before this turn was saved",
    )
    return {"ok": ok, "unanswered": lost}


def committed_exchanges(
    session: dict, logs: Iterable[dict], skip: set[int], tokens_of: Callable[[str], int]
) -> list[dict]:
    """Committed log messages not in `skip`, grouped into exchanges (by turn id; replies follow their user turn).

    Committed = marked "ok" or "unsummarised", or still "pending"/"unanswered" while the saved session says its
    turn committed (`committed_turns`: a crash between the session save, which is the commit point, and the
    status update) or holds it by seq (entries written before turn ids).
    """
    saved = {m.get("seq"): m.get("tokens") for m in [*session.get("window", []), *session.get("pending", [])]}
    turns = committed_turns(session)
    entries = [
        e
        for e in logs
        if e["seq"] not in skip
        and (
            e.get("status") in ("ok", "unsummarised")
            or (
                e.get("status") in ("pending", "unanswered")
                and (e.get("turn") in turns if e.get("turn") else e["seq"] in saved)
            )
        )
    ]
    exchanges: dict = {}
    by_turn: dict = {}
    last: list[dict] | None = None
    for e in entries:
        tokens = saved.get(e["seq"]) or e.get("tokens") or tokens_of(text_of(e))
        message = {"role": e["role"], "content": e["content"], "tokens": tokens, "seq": e["seq"]}
        if e.get("turn"):
            message["turn"] = e["turn"]
        target = by_turn.get(e.get("turn")) if e.get("turn") else None
        if target is None and e["role"] == "assistant":
            target = exchanges.get(e.get("reply_to"))
        if target is None and (e["role"] == "user" and starts_exchange(message) or last is None):
            last = exchanges.setdefault(e["seq"], [])
            target = last
        target = target if target is not None else last
        target.append(message)
        if e.get("turn"):
            by_turn.setdefault(e["turn"], target)
    return [m for key in sorted(exchanges) for m in exchanges[key]]
