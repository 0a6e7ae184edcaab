"""Plumbing: check that a session document agrees with its logs (nothing lost, nothing duplicated).

The logs are the source of truth: one entry per message, numbered by `seq`. A turn writes the user's
entry as "pending", calls the model, writes the reply as "pending", saves the session (the commit
point, version-guarded) and then marks both entries "ok". A failed call marks the user's entry
"unanswered". So after any crash or fault:

- every "ok" entry is in the window, in the summary's coverage, or in the session's `pending` list;
- "unanswered" entries are never in the session;
- "unsummarised" entries (left out of the summary past the pending bound, helpers.memory.pending) are never in the
  session either: they are kept only in the logs until `--rebuild` folds them back in;
- every entry carries the id of its turn (`turn`); the session save lists the ids it committed (`commits`), so
  a "pending" entry is either of a committed turn (the process died between the save and the status update:
  it counts exactly like an "ok" one, wherever it went since) or of a turn that never committed (outside the
  session; the next start marks it "unanswered"). There is no slack: the counts must add up exactly.

`check_consistency` returns a list of problems, empty when the session is consistent.
"""

from __future__ import annotations

from collections import Counter

__all__ = ["check_consistency"]


def check_consistency(store, user_id: str, session_id: str, *, budget: int | None = None) -> list[str]:
    """Problems between the session document and its logs ([] = consistent); `budget` also checks the window size.

    Verifies: seqs contiguous from 1 without duplicates; every window / pending message exists in the
    logs with the same role and content and is not 'unanswered'; no message twice in the session; every
    'ok' entry is in the window, covered by the summary (`summary_covers`) or pending; the counts add up;
    the window starts with a user turn; and (with `budget`) the window is within budget or one exchange.
    """
    from helpers.conversation import group_exchanges
    from helpers.memory.fold import committed_turns
    from helpers.memory.window import window_tokens

    problems: list[str] = []
    logs = store.logs_for(user_id, session_id)
    seqs = [e.get("seq") for e in logs]
    dupes = sorted(s for s, n in Counter(seqs).items() if n > 1)
    if dupes:
        problems.append(f"duplicate log seqs: {dupes[:10]}")
    if sorted(set(seqs)) != list(range(1, len(set(seqs)) + 1)):
        missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
        problems.append(f"log seqs are not contiguous from 1: missing {missing[:10]}")
    by_seq = {e["seq"]: e for e in logs}
    for e in logs:
        if e.get("user_id") != user_id or e.get("session_id") != session_id:
            problems.append(f"log seq {e.get('seq')} belongs to another user/session")
        if e.get("role") == "assistant" and e.get("reply_to") is not None:
            target = by_seq.get(e["reply_to"])
            if target is None or target.get("role") != "user":
                problems.append(f"log seq {e['seq']} replies to seq {e['reply_to']}, which is not a user entry")

    session = store.load_session(user_id, session_id)
    turns = committed_turns(session)
    ok = {
        e["seq"]
        for e in logs
        if e.get("status") == "ok"
        or (e.get("status") in ("pending", "unanswered") and e.get("turn") and e["turn"] in turns)
    }
    if session is None:
        if ok:
            problems.append(f"no session document, but {len(ok)} log entries are 'ok' (acknowledged)")
        return problems

    window = session.get("window") or []
    pending = session.get("pending") or []
    in_session: list[int] = []
    for where, messages in (("window", window), ("pending", pending)):
        for i, m in enumerate(messages):
            seq = m.get("seq")
            entry = by_seq.get(seq)
            if entry is None:
                problems.append(f"{where}[{i}] has seq {seq!r}, which is not in the logs")
                continue
            in_session.append(seq)
            if entry.get("role") != m.get("role") or entry.get("content") != m.get("content"):
                problems.append(f"{where}[{i}] (seq {seq}) differs from its log entry")
            if entry.get("status") not in ("ok", "pending") and entry["seq"] not in ok:
                problems.append(
                    f"{where}[{i}] (seq {seq}) is in the session but its log status is {entry.get('status')!r}"
                )
    twice = sorted(s for s, n in Counter(in_session).items() if n > 1)
    if twice:
        problems.append(f"seqs in the session more than once (window + pending): {twice[:10]}")

    if window and window[0].get("role") != "user":
        problems.append(f"window starts with a {window[0].get('role')!r} message, not a user turn")
    if budget is not None and window:
        used = window_tokens(window)
        if used > budget and len(group_exchanges(window)) > 1:
            problems.append(f"window holds {used} tokens > budget {budget} with more than one exchange")

    covers = session.get("summary_covers") or {}
    covered = covers.get("count") or 0
    first, last = covers.get("first_seq"), covers.get("last_seq")
    if covered and not (session.get("summary") or "").strip():
        problems.append(f"summary_covers counts {covered} messages but the summary is empty")
    held = set(in_session)
    for seq in sorted(ok - held):
        if not (covered and first is not None and last is not None and first <= seq <= last):
            problems.append(
                f"log seq {seq} is committed but neither in the window, pending, nor the summary's coverage"
            )
    # Counts: what the session accounts for must equal what it committed (turn ids decide; no slack for
    # 'pending' entries, which once hid a committed exchange that a rebuild had dropped).
    must = len(ok | held)
    slack = 0
    accounted = covered + len(in_session)
    if accounted < must:
        problems.append(
            f"counts do not add up: summary covers {covered} + window {len(window)} + pending "
            f"{len(pending)} = {accounted} < {must} acknowledged messages (some were lost)"
        )
    elif accounted > must + slack:
        problems.append(
            f"counts do not add up: summary covers {covered} + window {len(window)} + pending "
            f"{len(pending)} = {accounted} > {must + slack} committed messages (double-counted, or holding entries no turn committed)"
        )
    return problems
