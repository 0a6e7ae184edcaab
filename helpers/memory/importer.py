"""`--import`: append an existing (dated) transcript to a session without chat-model calls. Taught in further/05_long_conversations, section 'One context budget, split by evidence'.

`import_turns(memory, turns)` serves both stages. A bounded memory takes the turns one exchange at a time
(logs written, window trimmed, summary maintained). A memory with a long-term retriever imports in one batch
(`import_dated`): one fold of window and summary, one embedding batch for all turns, fact extraction over
several exchanges per call, and each turn's `ts` (or its conversation's date) as its memory's date.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import anthropic

from helpers.conversation import group_exchanges, starts_exchange, strip_meta, text_of, validate_messages
from helpers.memory.facts import MAX_FACT_CHARS
from helpers.memory.fold import new_turn_id
from helpers.memory.retention import extract_facts
from helpers.memory.transcript import Turn, check_turns, number_conversations, parse_when
from helpers.retrieval.bm25 import bm25_tokens
from helpers.retrieval.schema import TurnUnit

__all__ = ["import_turns", "import_dated", "as_turns", "log_extra", "IMPORT_FACT_BATCH", "IMPORT_FOLD_BATCH"]

IMPORT_FACT_BATCH = 8  # exchanges per fact-extraction call during an import
IMPORT_FOLD_BATCH = 16  # exchanges per window fold (and at most one summary call) in a bounded import


def as_turns(turns: list[Any]) -> list[Turn]:
    """Turn objects from `Turn`s or {role, content[, ts, speaker, conversation]} dicts (ts: ISO 8601 or datetime)."""
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
    return out


def turn_ids(messages: list[dict]) -> list[str]:
    """One new turn id per exchange (a user turn and what follows it), repeated for each of its messages."""
    ids: list[str] = []
    for i, message in enumerate(messages):
        ids.append(new_turn_id() if i == 0 or starts_exchange(message) else ids[-1])
    return ids


def log_extra(turn: Turn) -> dict:
    """The log fields an imported turn keeps besides role and content: imported, conversation, ts, speaker."""
    extra = {"imported": True, "conversation": turn.conversation, "ts": turn.ts, "speaker": turn.speaker}
    return {k: v for k, v in extra.items() if v is not None}


def import_turns(memory: Any, turns: list[Any]) -> dict:
    """Append `turns` to `memory`'s session as if they had happened, without calling the chat model.

    `memory` is a helpers.memory.BoundedMemory; with a retriever (a VectorMemory) its retriever imports the
    dated transcript in one batch (`LongTermMemory.import_transcript`, i.e. `import_dated`).
    """
    if memory.retriever is not None:
        memory.recall = None
        return memory.retriever.import_transcript(turns)
    items = as_turns(turns)  # each turn keeps its ts, speaker and conversation in the log
    messages = [t.message() for t in items]
    validate_messages(messages)
    imported, exchanges = 0, 0
    batch: list[dict] = []
    ids = turn_ids(messages)
    for i, turn in enumerate(messages):
        role, content = turn["role"], turn["content"]
        tokens = memory.tokens_of_text(text_of(turn))
        seq = memory.store.append_log(
            memory.user_id,
            memory.session_id,
            role,
            content,
            status="pending",
            tokens=tokens,
            extra={**log_extra(items[i]), "turn": ids[i]},
        )
        batch.append({"role": role, "content": content, "tokens": tokens, "seq": seq, "turn": ids[i]})
        exchanges += i + 1 == len(messages) or starts_exchange(messages[i + 1])
        if i + 1 == len(messages) or (exchanges >= IMPORT_FOLD_BATCH and starts_exchange(messages[i + 1])):
            # one fold per batch: the window takes the batch, one summary call covers what it pushes out
            session = memory.load()
            memory.commit_exchange(session, batch, memory.base_tokens(session), max_chunks=None)
            memory.store.set_log_status(
                memory.user_id, memory.session_id, [m["seq"] for m in batch], "ok", only_if_status="pending"
            )
            imported += len(batch)
            batch, exchanges = [], 0
    return {"imported": imported, **memory.state()}


def import_dated(memory: Any, turns: list[Any]) -> dict:
    """Append a transcript to `memory`'s session without chat-model calls; returns counts and the new state.

    `memory` is a helpers.memory.BoundedMemory with a LongTermMemory retriever (e.g. a VectorMemory).
    """
    items = as_turns(turns)
    validate_messages([t.message() for t in items])
    store, user, sid = memory.store, memory.user_id, memory.session_id
    ids = turn_ids([t.message() for t in items])
    entries = [
        {
            "role": t.role,
            "content": t.content,
            "tokens": memory.tokens_of_text(text_of(t.message())),
            "extra": {**log_extra(t), "turn": turn},
        }
        for t, turn in zip(items, ids)
    ]
    seqs = store.append_logs(user, sid, entries, status="pending")  # one insert, not one round trip per turn
    messages = [
        {"role": e["role"], "content": e["content"], "tokens": e["tokens"], "seq": seq, "turn": turn}
        for e, seq, turn in zip(entries, seqs, ids)
    ]
    # one fold: the window keeps the newest turns; batched summary calls (each within the pending bound) cover
    # everything older, so no imported turn is left out of the summary
    session = memory.load()
    _, info = memory.commit_exchange(session, messages, memory.base_tokens(session), remember=False, max_chunks=None)
    # entries the summary could not take stay "unsummarised" (--rebuild recovers them)
    store.set_log_status(user, sid, [m["seq"] for m in messages], "ok", only_if_status="pending")
    with memory.retriever.index.holding(user):  # one writer for the batch: no re-read of the cache per fact
        if memory.retriever.units == "turns":
            memory.retriever.index.add_turns(
                user, sid, [TurnUnit(m["seq"], t.role, text_of(m), t.ts, t.speaker) for m, t in zip(messages, items)]
            )
        pending = _extract_facts(memory, messages, items)
    starts: dict[int, tuple[int, datetime | None]] = {}
    for m, t in zip(messages, items):
        starts.setdefault(t.conversation, (m["seq"], t.ts))
    fields = {
        "conversation_start": starts[max(starts)][0] if starts else None,
        "conversations": [{"conversation": n, "first_seq": seq, "date": ts} for n, (seq, ts) in sorted(starts.items())],
    }
    for _ in range(memory.MAX_SAVE_ATTEMPTS):
        session = memory.load()
        fields["facts_pending"] = [*session.get("facts_pending", []), *pending]
        if store.save_session(user, sid, session["version"], fields) is not None:
            break
    return {
        "imported": len(messages),
        "conversations": len(starts),
        "facts_pending": len(fields["facts_pending"]),
        "summary_calls": (info.get("summary_result") or {}).get("calls", 0),
        **memory.state(),
    }


def _extract_facts(memory: Any, messages: list[dict], items: list[Turn]) -> list[dict]:
    """Extract facts over IMPORT_FACT_BATCH exchanges per call, embed them all in one batch, then store them in
    transcript order (dedup and supersede as in a live chat); a failed call's exchanges wait in facts_pending."""
    facts_memory = memory.retriever.facts
    when = {m["seq"]: t.ts for m, t in zip(messages, items)}
    conversation = {m["seq"]: t.conversation for m, t in zip(messages, items)}
    parties = _parties(items)
    pending, found = [], []
    for chunk in _chunks(group_exchanges(messages), conversation):
        plain = [strip_meta(m) for m in chunk]
        try:
            facts = extract_facts(facts_memory.client, facts_memory.model, plain, facts_memory.ledger)
        except anthropic.APIError:
            memory.stats["memory_failures"] += 1
            pending.append({"messages": plain, "seq": chunk[0]["seq"]})
            continue
        named = (name_parties(" ".join(f.split()), *parties) for f in facts)
        found.append((chunk, [f for f in named if informative(f, parties)]))
    texts = list(dict.fromkeys(f for _, facts in found for f in facts if 0 < len(f) <= MAX_FACT_CHARS))
    vectors = dict(zip(texts, facts_memory.embedder.embed(texts))) if texts else {}
    for chunk, facts in found:
        source = {"session_id": memory.session_id, "seq": chunk[0]["seq"]}
        facts_memory.add_facts(memory.user_id, facts, source, now=when.get(chunk[-1]["seq"]), vectors=vectors)
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
