"""`--import`: append an existing (dated) transcript to a session without chat-model calls, once. Taught in further/05_long_conversations, section 'One context budget, split by evidence'.

`import_turns(memory, turns)` serves both stages. A bounded memory takes the turns in batches of exchanges
(logs written, window trimmed, summary maintained). A memory with a long-term retriever imports in one batch
(`import_dated`): one fold of window and summary, one embedding batch for all turns, fact extraction over
several exchanges per call, and each turn's `ts` (or its conversation's date) as its memory's date.

Run it again and nothing is written twice. Each turn has a stable identity (`line_id`: helpers.memory.transcript),
kept in its log entry, and each exchange's turn id is derived from its first line's. An import first reads which of
its turns the session already holds (`plan_import`): a turn an earlier run committed is skipped; one it logged but
never committed (killed before the session save) is committed now under its old seq and turn id; only the rest is
appended. So a killed import run again completes it, and a finished one run again writes nothing.

Long-term memory (vector stage) is written after the commit, from the logs: the entries are logged marked "todo"
(helpers.memory.remember), `remember_imported` stores their turns, then each chunk's facts, and marks a chunk's
entries done once its facts are stored. An import killed on the way is finished by the next start (or by running it
again), which stores only what is still marked (turns keyed by (session, seq), facts deduplicated by content).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import anthropic

from helpers.conversation import group_exchanges, starts_exchange, strip_meta, text_of, validate_messages
from helpers.db.crash import crash_point
from helpers.memory.facts import MAX_FACT_CHARS
from helpers.memory.fold import committed_turns
from helpers.memory.remember import mark_remembered
from helpers.memory.retention import extract_facts
from helpers.memory.transcript import Turn, check_turns, identify, number_conversations, parse_when
from helpers.retrieval.bm25 import bm25_tokens
from helpers.retrieval.schema import TurnUnit

__all__ = [
    "import_turns",
    "import_dated",
    "as_turns",
    "log_extra",
    "plan_import",
    "remember_imported",
    "IMPORT_FACT_BATCH",
    "IMPORT_FOLD_BATCH",
]

IMPORT_FACT_BATCH = 8  # exchanges per fact-extraction call during an import
IMPORT_FOLD_BATCH = 16  # exchanges per window fold (and at most one summary call) in a bounded import


def as_turns(turns: list[Any]) -> list[Turn]:
    """Turn objects from `Turn`s or {role, content[, ts, speaker, conversation]} dicts (ts: ISO 8601 or datetime),
    checked like typed turns and each with its `line_id`."""
    out = []
    for i, item in enumerate(turns):
        if isinstance(item, Turn):
            out.append(item)
            continue
        if not isinstance(item, dict):
            raise ValueError(f"turns[{i}]: expected a dict with 'role' and 'content', got {type(item).__name__}")
        ts = item.get("ts")
        if isinstance(ts, str):
            ts = parse_when(ts)
        elif ts is not None and not isinstance(ts, datetime):
            raise ValueError(f"turns[{i}]: ts must be an ISO 8601 string or a datetime, got {ts!r}")
        out.append(
            Turn(item.get("role"), item.get("content"), ts, int(item.get("conversation") or 0), item.get("speaker"))
        )
    if not any(isinstance(item, Turn) or "conversation" in item for item in turns):
        number_conversations(out)  # without conversation numbers, a new day starts a new conversation
    check_turns(out)  # checked like typed turns, all of them before the first write
    return identify(out)


def turn_ids(items: list[Turn]) -> list[str]:
    """Each turn's turn id: its exchange's (a user turn and what follows it), derived from that exchange's first
    line, so a second run of the same import gives the same ids."""
    ids: list[str] = []
    for i, item in enumerate(items):
        ids.append(f"L{item.line_id[:15]}" if i == 0 or starts_exchange(item.message()) else ids[-1])
    return ids


def log_extra(turn: Turn) -> dict:
    """The log fields an imported turn keeps besides role and content: imported, conversation, ts, speaker, line_id."""
    extra = {
        "imported": True,
        "conversation": turn.conversation,
        "ts": turn.ts,
        "speaker": turn.speaker,
        "line_id": turn.line_id,
    }
    return {k: v for k, v in extra.items() if v is not None}


def plan_import(memory: Any, items: list[Turn]) -> tuple[list[dict | None], set[str]]:
    """Each turn's log entry from an earlier run of this import (by line_id; None if it has none), and the turn
    ids the session committed (an entry of one of those, or marked 'ok'/'unsummarised', is committed)."""
    store, user, sid = memory.store, memory.user_id, memory.session_id
    fields = {"_id": 0, "line_id": 1, "seq": 1, "status": 1, "turn": 1, "tokens": 1}
    have = {e["line_id"]: e for e in store.logs.find({"user_id": user, "session_id": sid, "imported": True}, fields)}
    return [have.get(t.line_id) for t in items], committed_turns(store.load_session(user, sid))


def _pending_messages(memory: Any, items: list[Turn], marks: dict) -> tuple[list[int], list[dict], list[int]]:
    """Log what this run must commit: entries an earlier run logged but never committed are taken again (status
    'pending', same seq and turn id); turns with no entry are appended. Returns (each turn's seq, the messages to
    commit in transcript order, the indexes of those turns)."""
    store, user, sid = memory.store, memory.user_id, memory.session_id
    existing, committed = plan_import(memory, items)
    ids = turn_ids(items)
    todo = [
        i
        for i, e in enumerate(existing)
        if e is None or (e.get("status") not in ("ok", "unsummarised") and e.get("turn") not in committed)
    ]
    again = [existing[i]["seq"] for i in todo if existing[i] is not None]
    if again:
        query = {"user_id": user, "session_id": sid, "seq": {"$in": again}}
        store.logs.update_many(query, {"$set": {"status": "pending", "error": None, **marks}})
    new = [i for i in todo if existing[i] is None]
    entries = [
        {
            "role": items[i].role,
            "content": items[i].content,
            "tokens": memory.tokens_of_text(text_of(items[i].message())),
            "extra": {**log_extra(items[i]), "turn": ids[i], **marks},
        }
        for i in new
    ]
    seqs = dict(zip(new, store.append_logs(user, sid, entries, status="pending")))  # one insert
    crash_point("import:logged")
    seq_of = [seqs[i] if e is None else e["seq"] for i, e in enumerate(existing)]
    tokens = {i: entries[k]["tokens"] for k, i in enumerate(new)}
    messages = [
        {
            "role": items[i].role,
            "content": items[i].content,
            "tokens": tokens.get(i) or existing[i].get("tokens") or memory.tokens_of_text(text_of(items[i].message())),
            "seq": seq_of[i],
            "turn": existing[i]["turn"] if existing[i] is not None and existing[i].get("turn") else ids[i],
        }
        for i in todo
    ]
    return seq_of, messages, todo


def import_turns(memory: Any, turns: list[Any]) -> dict:
    """Append `turns` to `memory`'s session as if they had happened, without calling the chat model; a turn this
    session already has from an earlier run of the same import is not written again.

    `memory` is a helpers.memory.BoundedMemory; with a retriever (a VectorMemory) its retriever imports the
    dated transcript in one batch (`LongTermMemory.import_transcript`, i.e. `import_dated`).
    """
    if memory.retriever is not None:
        memory.recall = None
        return memory.retriever.import_transcript(turns)
    items = as_turns(turns)  # each turn keeps its ts, speaker and conversation in the log
    validate_messages([t.message() for t in items])
    _, messages, todo = _pending_messages(memory, items, {})
    batch: list[dict] = []
    exchanges = 0
    for i, message in enumerate(messages):
        batch.append(message)
        exchanges += i + 1 == len(messages) or starts_exchange(messages[i + 1])
        if i + 1 == len(messages) or (exchanges >= IMPORT_FOLD_BATCH and starts_exchange(messages[i + 1])):
            # one fold per batch: the window takes the batch, one summary call covers what it pushes out
            session = memory.load()
            memory.commit_exchange(session, batch, memory.base_tokens(session), max_chunks=None)
            memory.store.set_log_status(
                memory.user_id, memory.session_id, [m["seq"] for m in batch], "ok", only_if_status="pending"
            )
            crash_point("import:batch")
            batch, exchanges = [], 0
    return {"imported": len(messages), "skipped": len(items) - len(todo), **memory.state()}


def import_dated(memory: Any, turns: list[Any]) -> dict:
    """Append a transcript to `memory`'s session without chat-model calls; returns counts and the new state.

    `memory` is a helpers.memory.BoundedMemory with a LongTermMemory retriever (e.g. a VectorMemory). Run again, it
    completes what an earlier run left undone and writes nothing twice (see the module docstring).
    """
    items = as_turns(turns)
    validate_messages([t.message() for t in items])
    store, user, sid = memory.store, memory.user_id, memory.session_id
    seq_of, messages, todo = _pending_messages(memory, items, memory.retriever.todo_marks())
    info: dict = {}
    if messages:
        # one fold: the window keeps the newest turns; batched summary calls (each within the pending bound) cover
        # everything older, so no imported turn is left out of the summary
        session = memory.load()
        _, info = memory.commit_exchange(
            session, messages, memory.base_tokens(session), remember=False, max_chunks=None
        )
        crash_point("import:folded")
        # entries the summary could not take stay "unsummarised" (--rebuild recovers them)
        store.set_log_status(user, sid, [m["seq"] for m in messages], "ok", only_if_status="pending")
        crash_point("import:confirmed")
    remembered = memory.retriever.recover()  # turns and facts, from the entries still marked "todo"
    starts: dict[int, tuple[int, datetime | None]] = {}
    for seq, t in zip(seq_of, items):
        starts.setdefault(t.conversation, (seq, t.ts))
    fields = {
        "conversation_start": starts[max(starts)][0] if starts else None,
        "conversations": [{"conversation": n, "first_seq": seq, "date": ts} for n, (seq, ts) in sorted(starts.items())],
    }
    for _ in range(memory.MAX_SAVE_ATTEMPTS):
        session = memory.load()
        if store.save_session(user, sid, session["version"], fields) is not None:
            break
    crash_point("import:saved")
    return {
        "imported": len(messages),
        "skipped": len(items) - len(todo),
        "remembered": remembered,
        "conversations": len(starts),
        "facts_pending": len(session.get("facts_pending") or []),
        "summary_calls": (info.get("summary_result") or {}).get("calls", 0),
        **memory.state(),
    }


def remember_imported(memory: Any, entries: list[dict]) -> int:
    """Store the long-term memories imported log entries still owe (helpers.memory.remember.unremembered): their
    turns in one batch, then facts over IMPORT_FACT_BATCH exchanges per call, each chunk's entries marked done once
    its facts are stored; a chunk whose extraction failed waits in facts_pending. Returns how many turns."""
    store, user, sid = memory.store, memory.user_id, memory.session_id
    messages = [{k: e.get(k) for k in ("role", "content", "seq", "turn")} for e in entries]
    items = [Turn(e["role"], e["content"], e.get("ts"), e.get("conversation") or 0, e.get("speaker")) for e in entries]
    speakers = store.logs.find(
        {"user_id": user, "session_id": sid, "imported": True}, {"_id": 0, "role": 1, "speaker": 1}
    )
    parties = _parties([Turn(e["role"], "", speaker=e.get("speaker")) for e in speakers])
    with memory.retriever.index.holding(user):  # one writer for the batch: no re-read of the cache per fact
        if memory.retriever.units == "turns":
            memory.retriever.index.add_turns(
                user, sid, [TurnUnit(m["seq"], t.role, text_of(m), t.ts, t.speaker) for m, t in zip(messages, items)]
            )
        crash_point("import:turns")
        pending = _extract_facts(memory, messages, items, parties)
    if pending:
        key = {"user_id": user, "session_id": sid}
        store.sessions.update_one(key, {"$push": {"facts_pending": {"$each": [item for item, _ in pending]}}})
        mark_remembered(store, user, sid, [seq for _, seqs in pending for seq in seqs])
    return len(messages)


def _extract_facts(
    memory: Any, messages: list[dict], items: list[Turn], parties: tuple[str | None, str | None]
) -> list[tuple[dict, list[int]]]:
    """Extract facts over IMPORT_FACT_BATCH exchanges per call, embed them all in one batch, then store them in
    transcript order (dedup and supersede as in a live chat), marking each chunk's entries done once stored; returns
    the failed calls' exchanges (to wait in facts_pending) with their seqs."""
    facts_memory = memory.retriever.facts
    when = {m["seq"]: t.ts for m, t in zip(messages, items)}
    conversation = {m["seq"]: t.conversation for m, t in zip(messages, items)}
    pending, found = [], []
    for chunk in _chunks(group_exchanges(messages), conversation):
        plain = [strip_meta(m) for m in chunk]
        try:
            facts = extract_facts(facts_memory.client, facts_memory.model, plain, facts_memory.ledger)
        except anthropic.APIError:
            memory.stats["memory_failures"] += 1
            pending.append(({"messages": plain, "seq": chunk[0]["seq"]}, [m["seq"] for m in chunk]))
            continue
        named = (name_parties(" ".join(f.split()), *parties) for f in facts)
        found.append((chunk, [f for f in named if informative(f, parties)]))
    texts = list(dict.fromkeys(f for _, facts in found for f in facts if 0 < len(f) <= MAX_FACT_CHARS))
    vectors = dict(zip(texts, facts_memory.embedder.embed(texts))) if texts else {}
    for chunk, facts in found:
        source = {"session_id": memory.session_id, "seq": chunk[0]["seq"]}
        facts_memory.add_facts(memory.user_id, facts, source, now=when.get(chunk[-1]["seq"]), vectors=vectors)
        crash_point("import:chunk")
        mark_remembered(memory.store, memory.user_id, memory.session_id, [m["seq"] for m in chunk])
    return pending


def _chunks(groups: list[list[dict]], conversation: dict[int, int]) -> list[list[dict]]:
    """Up to IMPORT_FACT_BATCH exchanges per extraction call, never across two conversations (a fact is dated by
    its chunk, so a chunk spans one day)."""
    chunks: list[list[dict]] = []
    size, last = 0, None
    for group in groups:
        here = conversation.get(group[0]["seq"])
        if not chunks or size >= IMPORT_FACT_BATCH or here != last:
            chunks.append([])
            size = 0
        chunks[-1].extend(group)
        size, last = size + 1, here
    return chunks


def _parties(items: list[Turn]) -> tuple[str | None, str | None]:
    """The user's and the assistant's names when the transcript names its speakers (one name per role)."""
    names = {role: {t.speaker for t in items if t.role == role and t.speaker} for role in ("user", "assistant")}
    return tuple(next(iter(names[r])) if len(names[r]) == 1 else None for r in ("user", "assistant"))


def name_parties(fact: str, user: str | None, assistant: str | None) -> str:
    """A fact about two named people keeps their names: "the user" → "Caroline", "the assistant's" → "Melanie's"."""
    for role, name in (("user", user), ("assistant", assistant)):
        if name:
            fact = re.sub(rf"\b[Tt]he {role}\b", name, fact)
    return fact


_NO_NEWS = frozenset(
    "agree agrees agreed thank thanks yes no sure ok okay great cool awesome glad happy love loves "
    "totally definitely really good nice wow".split()
)


def informative(fact: str, parties: tuple[str | None, str | None] = (None, None)) -> bool:
    """Whether a fact says something: at least two content words besides the people's names and words of mere
    agreement or thanks ("Caroline totally agrees, Melanie." and "Yes, the user did." say nothing)."""
    names = {n.lower() for n in parties if n}
    return len([w for w in bm25_tokens(fact) if w not in names and w not in _NO_NEWS]) >= 2
