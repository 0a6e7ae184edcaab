"""The kill matrix's scenarios (tests/tools/test_kill_matrix.py): a vector chat or a vector import ended at a named
crash point (helpers.db.crash), the next start, and the invariants that must hold after it.

Shared by the in-process version (the crash point raises `Killed`, which nothing in the memory layer catches) and the
real-process one (a forked process ends there through os._exit, as SIGKILL would end it)."""

from __future__ import annotations

import functools
import gc
import hashlib
import os
import random
import re
from collections import Counter

import numpy as np

from helpers.config import load_settings
from helpers.conversation import text_of
from helpers.db import crash
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import VectorMemory
from helpers.memory.importer import import_turns
from helpers.tools.consistency import check_consistency

TURN_POINTS = ["turn:logged", "turn:replied", "commit:saved", "memory:turns", "memory:facts", "commit:confirmed"]
COMMITTED = {"commit:saved", "memory:turns", "memory:facts", "commit:confirmed"}  # the save is the commit point
IMPORT_POINTS = [
    "import:logged",
    "import:folded",
    "import:confirmed",
    "import:turns",
    "import:chunk@1",
    "import:chunk@2",
    "import:saved",
    "index:announced@1",  # issue 41: a memory write announced, its documents not inserted (the turns' batch)
    "index:announced@3",  # ... a fact's
]
USER, SESSION = "u", "s"


class Killed(BaseException):
    """A kill, in process: not an Exception, so no handler in the memory layer runs."""


class HashEmbedder:
    """A tiny deterministic bag-of-words embedder (no model download, same vectors in every process)."""

    name, dim = "kill-hash-embedder", 64

    def embed(self, texts):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                rows[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)


def vector(store, **more) -> VectorMemory:
    settings = load_settings({})
    return VectorMemory(
        get_client(settings, max_retries=0),
        settings,
        store=store,
        user_id=USER,
        session_id=SESSION,
        embedder=HashEmbedder(),
        context_budget=700,
        summary_max_tokens=80,
        check_retention=False,
        **more,
    )


def chat_script(seed: int) -> tuple[list[str], str, list[str]]:
    """Turns before the killed one, the killed one, turns after: facts that differ per seed."""
    rnd = random.Random(seed)
    name, city = rnd.choice(["Maya", "Ana", "Lena", "Omar"]), rnd.choice(["Portland", "Denver", "Austin", "Boise"])
    facts = [
        f"My name is {name} and I live in {city}.",
        f"My locker code at the climbing gym is {rnd.randrange(1000, 9999)}.",
        f"My sister {rnd.choice(['Priya', 'Noor', 'Ines'])} lives in {rnd.choice(['Pasadena', 'Tucson', 'Reno'])}.",
        f"My flight number is UA{rnd.randrange(100, 999)}.",
        f"My dog is called {rnd.choice(['Miso', 'Biscuit', 'Pepper'])}.",
    ]
    before = facts[: rnd.randint(1, 3)]
    return before, facts[len(before)], [*facts[len(before) + 1 :], "Any food trucks near Echo Park you like?"]


def transcript(seed: int) -> list[dict]:
    """A dated two-person transcript: 2 conversations of 5 exchanges (so 2 fact chunks)."""
    rnd = random.Random(seed)
    turns = []
    for i in range(10):
        day = "2023-05-08" if i < 5 else "2023-05-09"
        said = f"Day {i}: my locker at gym {i} has code {rnd.randrange(1000, 9999)} and I love {rnd.choice(['tea', 'jazz', 'kayaks'])}."
        turns.append({"role": "user", "content": said, "speaker": "Maya", "ts": f"{day}T10:{i:02d}:00"})
        turns.append(
            {"role": "assistant", "content": f"Noted, gym {i}.", "speaker": "Scout", "ts": f"{day}T10:{i:02d}:30"}
        )
    return turns


def arm(point: str | None, in_process: bool) -> None:
    """Make the process end at `point` (None: disarm). In process, the crash point raises Killed instead."""
    crash.VISITS.clear()
    if point is None:
        os.environ.pop("GTE_CRASH_AT", None)
        crash.EXIT = os._exit
        return
    os.environ["GTE_CRASH_AT"] = point

    def die(code: int) -> None:
        raise Killed(code)

    crash.EXIT = die if in_process else os._exit


def chat_until_killed(store, seed: int, point: str, in_process: bool = True) -> bool:
    """Chat the turns before, then die at `point` in the next one; True if the crash point was reached."""
    before, killed, _ = chat_script(seed)
    memory = vector(store)
    for text in before:
        memory.turn(text)
    arm(point, in_process)
    try:
        memory.turn(killed)
    except Killed:
        return True
    finally:
        arm(None, in_process)
        del memory
        gc.collect()  # the dead process's memory object is gone (its writer no longer counts as alive)
    return False


def resume_chat(store, seed: int) -> dict:
    """A new process: it recovers on start, then chats on."""
    memory = vector(store)
    recovered = memory.recover()
    for text in chat_script(seed)[2]:
        memory.turn(text)
    return recovered


@functools.cache
def reference_chat(seed: int, committed: bool) -> tuple[str, ...]:
    """The active facts of the same chat with no kill (the killed turn happened iff it had committed)."""
    before, killed, after = chat_script(seed)
    store = mongomock_store()
    memory = vector(store)
    for text in [*before, *([killed] if committed else []), *after]:
        memory.turn(text)
    return tuple(active_facts(store))


@functools.cache
def reference_import(seed: int) -> tuple[str, ...]:
    """The active facts of the same import, never killed."""
    store = mongomock_store()
    import_turns(vector(store), transcript(seed))
    return tuple(active_facts(store))


def import_until_killed(store, seed: int, point: str, in_process: bool = True) -> bool:
    memory = vector(store)
    arm(point, in_process)
    try:
        import_turns(memory, transcript(seed))
    except Killed:
        return True
    finally:
        arm(None, in_process)
        del memory
        gc.collect()
    return False


def resume_import(store, seed: int) -> tuple[dict, dict]:
    """A new process recovers on start (what it finds committed is remembered), then runs the import again."""
    memory = vector(store)
    recovered = memory.recover()
    after_start = problems(store, imported=len(transcript(seed)), complete=False)
    result = import_turns(memory, transcript(seed))
    return {"recovered": recovered, "problems_after_start": after_start}, result


def active_facts(store) -> tuple[str, ...]:
    return tuple(sorted(d["text"] for d in store.memories.find({"user_id": USER, "kind": "fact", "active": True})))


def problems(store, *, imported: int | None = None, complete: bool = True) -> list[str]:
    """What must hold after a resume: the session agrees with its logs; every committed entry has exactly one turn
    memory and is marked remembered; no entry that never committed has one; no fact or log is there twice;
    with `imported` (and `complete`), the import's turns are each logged exactly once, all of them."""
    found = [f"consistency: {p}" for p in check_consistency(store, USER, SESSION)]
    logs = store.logs_for(USER, SESSION)
    episodes = Counter(
        (d["source"]["session_id"], d["source"]["seq"])
        for d in store.memories.find({"user_id": USER, "kind": "episode"})
    )
    for e in logs:
        committed = e["status"] in ("ok", "unsummarised")
        count = episodes.get((SESSION, e["seq"]), 0)
        if committed and count != 1 and text_of(e).strip():
            found.append(f"committed seq {e['seq']} ({e['role']}) has {count} turn memories")
        if committed and e.get("memory") == "todo":
            found.append(f"committed seq {e['seq']} is still owed to long-term memory")
        if not committed and count:
            found.append(f"seq {e['seq']} never committed ({e['status']}) but has a turn memory")
    facts = Counter(d["content_hash"] for d in store.memories.find({"user_id": USER, "kind": "fact", "active": True}))
    found += [f"fact {h} stored {n} times" for h, n in facts.items() if n > 1]
    lines = Counter(e["line_id"] for e in logs if e.get("line_id"))
    found += [f"line {line} logged {n} times" for line, n in lines.items() if n > 1]
    if imported is not None and complete and len(lines) != imported:
        found.append(f"{len(lines)} of {imported} imported lines logged")
    return found
