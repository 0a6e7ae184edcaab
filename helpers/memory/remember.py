"""Write long-term memory after the commit, retry what failed, and finish what a crash left undone. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

The write side of LongTermMemory (helpers/memory/long_term.py), which takes it as a mixin. After the session save
(the commit point, helpers/memory/commit.py) a committed exchange owes long-term memory its turns (one memory each,
keyed by (session, seq)) and the facts extracted from it.

Crash safety: what is owed is written down before the commit, in the logs. Every entry the vector stage logs carries
`memory: "todo"` and its `writer` (this process and this memory object). The exchange's memories are stored after
the save, and only then are its entries marked 'ok' and `memory: "done"`, in the one update that confirms the turn
(helpers.memory.fold.confirm_turns). A process killed anywhere between the save and that update leaves committed
entries still marked "todo", so `recover()` can find them: it runs at every start (the terminal chat before its
first read, a memory's first turn, `--rebuild`, `--import`) and stores them again. Every write is idempotent (turns
keyed by (session, seq), facts deduplicated by their content hash, episodes per source), so a replay never makes a
duplicate. An entry of a writer that still runs (another process mid-turn on the same session) is left to it;
past RECOVER_AFTER_S, or once its process is gone, anyone finishes it.

A failed write (the model, the embedder, the database) is not a crash: the exchange waits in the session's
`facts_pending` list, retried at the next turn (at most FACTS_PENDING_MAX are kept), and its entries are done.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import weakref
from datetime import datetime, timezone
from functools import partial
from typing import Any

import anthropic

from helpers.conversation import strip_meta, text_of
from helpers.db.crash import crash_point
from helpers.db.processes import process_token, token_alive
from helpers.memory.fold import committed_turns
from helpers.memory.history import TurnResult
from helpers.memory.pending import is_retryable
from helpers.retrieval.schema import TurnUnit

__all__ = ["LongTermWrites", "TODO", "DONE", "RECOVER_AFTER_S", "unremembered", "mark_remembered"]

TODO, DONE = {"memory": "todo"}, {"memory": "done"}  # the mark on a log entry: owed to long-term memory, or stored
RECOVER_AFTER_S = 600  # an entry still owed after this long is finished by anyone, even if its writer may run
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # this process's memories, by writer id
_NUMBER = itertools.count(1)
log = logging.getLogger(__name__)
_PROCESS: dict = {}  # this process's token, computed once per pid (a forked child gets its own)


def _process() -> str:
    if _PROCESS.get("pid") != os.getpid():
        _PROCESS.update(pid=os.getpid(), token=process_token())
    return _PROCESS["token"]


def _alive(writer: Any) -> bool:
    """Whether the memory that wrote an entry may still be writing it (then it is left to that memory, which
    finishes an interrupted write itself at its next turn)."""
    process, _, _number = str(writer).rpartition(":")
    if process == _process():
        return writer in _LIVE
    return token_alive(process) is not False  # another host (None): only the lease can tell


def unremembered(store: Any, user_id: str, session_id: str, *, mine: str | None = None) -> list[dict]:
    """The session's committed log entries still owed to long-term memory, oldest first: marked "todo", of a turn
    the session committed, and not of a writer that may still be writing them (`mine` is the caller's writer id:
    its own entries are never in flight while it recovers)."""
    entries = list(store.logs.find({"user_id": user_id, "session_id": session_id, **TODO}, {"_id": 0}).sort("seq", 1))
    if not entries:
        return []
    turns = committed_turns(store.load_session(user_id, session_id))
    now = datetime.now(timezone.utc)

    def committed(e: dict) -> bool:
        return e.get("status") in ("ok", "unsummarised") or (e.get("turn") is not None and e["turn"] in turns)

    def owned(e: dict) -> bool:
        if e.get("writer") in (mine, None):
            return False
        created = e.get("created_at") or now
        age = (now - (created if created.tzinfo else created.replace(tzinfo=timezone.utc))).total_seconds()
        return age <= RECOVER_AFTER_S and _alive(e["writer"])

    return [e for e in entries if committed(e) and not owned(e)]


def mark_remembered(store: Any, user_id: str, session_id: str, seqs: list[int]) -> int:
    """Mark these entries' memories stored (`memory: "done"`); returns how many were still owed."""
    if not seqs:
        return 0
    query = {"user_id": user_id, "session_id": session_id, "seq": {"$in": list(seqs)}, **TODO}
    return store.logs.update_many(query, {"$set": DONE}).modified_count


class LongTermWrites:
    """LongTermMemory's writes. A mixin: it uses the attributes LongTermMemory sets up (memory, index, facts,
    units, worker, _retry) and its erasure guard (`_written_while_alive`, helpers.memory.forget.ErasureGuard)."""

    FACTS_PENDING_MAX = 20  # exchanges kept for a later long-term memory write; older ones are given up on

    def _take_writer_id(self) -> None:
        """Called from `attach`: this memory's writer id, and it counts as alive while it exists."""
        self.writer = f"{_process()}:{next(_NUMBER)}"
        self.interrupted = False  # True from the start of a memory write until it ends: an interrupt leaves it True
        self.recovered = False
        _LIVE[self.writer] = self

    def todo_marks(self) -> dict:
        """The fields every log entry of an exchange gets before the commit: owed to long-term memory, by whom."""
        return {**TODO, "writer": self.writer}

    # -- a turn
    def before_turn(self) -> None:
        """Finish what a crash (or an interrupted write of this memory) left undone, once; background mode: queue
        again the exchanges whose memory write failed."""
        if not self.recovered or self.interrupted:
            try:
                self.recover()
            except Exception as err:  # noqa: BLE001 - the turn goes on; the next one tries again
                self.memory.stats["memory_failures"] += 1
                log.warning("could not finish the long-term memory a crash left owed (%s); trying again next turn", err)
        if self.worker is not None:
            while self._retry:
                user_id, messages, source, more = self._retry.pop(0)
                self.worker.submit(user_id, messages, source, **more)

    def committed(self, session: dict, exchange: list[dict]) -> dict:
        """Inline mode: store the committed exchange (and earlier failures) now, and return the mark that says so
        for its log entries; background mode: nothing yet (the worker marks them when it has stored them)."""
        if self.worker is not None:
            return {}
        self.interrupted = True
        seqs = [m.get("seq") for m in [*exchange, *(session.get("facts_pending") or [])]]
        # never for a user erased meanwhile (helpers.memory.forget.ErasureGuard)
        self._written_while_alive(self.memory.life, seqs, lambda: self._remember_committed(session, exchange))
        crash_point("memory:facts")
        self.interrupted = False
        return dict(DONE)

    def after_turn(self, result: TurnResult) -> None:
        """Background mode: index both turns now and queue the fact extraction."""
        if self.worker is None:
            return
        memory = self.memory
        exchange = [
            {"role": "user", "content": text_of(result.request["messages"][-1]), "seq": result.user_seq},
            {"role": "assistant", "content": result.reply, "seq": result.assistant_seq},
        ]
        life, source = memory.life, {"session_id": memory.session_id, "seq": result.user_seq}
        seqs = [result.user_seq, result.assistant_seq]
        if self._written_while_alive(life, seqs, lambda: self._index_turns(exchange)):
            self.worker.submit(memory.user_id, [strip_meta(m) for m in exchange], source, seqs=seqs, life=life)

    def _index_turns(self, exchange: list[dict], when: Any = None) -> None:
        if self.units == "turns":
            units = [
                TurnUnit(m["seq"], m["role"], text_of(m), m.get("ts") or when, m.get("speaker"))
                for m in exchange
                if m.get("seq") is not None
            ]
            self.index.add_turns(self.memory.user_id, self.memory.session_id, units)

    def _remember_job(
        self, user_id: str, messages: list[dict], source: dict, seqs: list[int] | None = None, life: Any = None
    ) -> None:
        try:
            remember = partial(self.facts.remember, user_id, messages, source, episode=self.units == "exchanges")
            self._written_while_alive(life, [source.get("seq")], remember)
        except Exception as err:
            # retried on the next turn, as inline mode does: a non-retryable model error (400/404 …) is given up
            # on and counted, and the list keeps at most FACTS_PENDING_MAX (the oldest are given up on)
            if isinstance(err, anthropic.APIError) and not is_retryable(err):
                self.memory.stats["memory_skipped"] += 1
                self._mark(seqs)
            else:
                self._retry.append((user_id, messages, source, {"seqs": seqs, "life": life}))
                while len(self._retry) > self.FACTS_PENDING_MAX:
                    self._retry.pop(0)
                    self.memory.stats["memory_skipped"] += 1
            raise
        self._mark(seqs)

    def _mark(self, seqs: list[int] | None) -> None:
        mark_remembered(self.memory.store, self.memory.user_id, self.memory.session_id, seqs or [])

    def _remember_committed(self, session: dict, exchange: list[dict]) -> None:
        """Store this exchange (and earlier failures) in long-term memory; update `facts_pending` atomically."""
        earlier = list(session.get("facts_pending") or [])
        left, given_up = self._remember_now(earlier, exchange)
        self._keep_pending(earlier, left, given_up)

    def _keep_pending(self, earlier: list[dict], left: list[dict], given_up: int) -> None:
        """`facts_pending` after a write: the earlier items done leave it, the new failures join it."""
        done = [item["seq"] for item in earlier if item not in left]
        new = [item for item in left if item not in earlier]
        key = {"user_id": self.memory.user_id, "session_id": self.memory.session_id}
        sessions = self.memory.store.sessions
        # $pull/$push, not a versioned save: concurrent turns each add or remove only their own items
        if done:
            sessions.update_one(key, {"$pull": {"facts_pending": {"seq": {"$in": done}}}})
        if new:
            sessions.update_one(key, {"$push": {"facts_pending": {"$each": new}}})
        if given_up:
            sessions.update_one(key, {"$inc": {"facts_skipped": given_up}})

    def _remember_now(self, pending: list[dict], exchange: list[dict]) -> tuple[list[dict], int]:
        """Store turns, episodes and facts for earlier failures and this exchange; returns (what to retry, how many
        given up).

        Any error (model, embedder, database) keeps the item for a later turn, up to FACTS_PENDING_MAX items;
        a non-retryable model error (400/401/403/404) is given up on and counted, never retried forever.
        """
        stats, t0 = self.memory.stats, time.perf_counter()
        todo = [*pending, {"messages": [strip_meta(m) for m in exchange], "seq": exchange[0].get("seq")}]
        left, given_up = [], 0
        try:
            self._index_turns(exchange)  # no model call; an embedder or database error is retried with the facts
            crash_point("memory:turns")
        except Exception:  # noqa: BLE001 - nothing here may lose the committed turn
            stats["memory_failures"] += 1
            todo[-1]["turns"] = [strip_meta(m) | {"seq": m.get("seq")} for m in exchange]
        for item in todo:
            try:
                if item.get("turns"):
                    self._index_turns(item["turns"])
                    item.pop("turns")
                self.facts.remember(
                    self.memory.user_id,
                    item["messages"],
                    {"session_id": self.memory.session_id, "seq": item["seq"]},
                    episode=self.units == "exchanges",
                )
            except Exception as err:  # noqa: BLE001 - nothing here may lose the committed turn
                stats["memory_failures"] += 1
                if isinstance(err, anthropic.APIError) and not is_retryable(err):
                    given_up += 1
                else:
                    left.append(item)
        if len(left) > self.FACTS_PENDING_MAX:  # the oldest are given up on (their episodes are usually stored)
            given_up += len(left) - self.FACTS_PENDING_MAX
            left = left[-self.FACTS_PENDING_MAX :]
        stats["memory_skipped"] += given_up
        stats["memory_s"] += time.perf_counter() - t0
        return left, given_up

    # -- after a crash
    def remember_logged(self, entries: list[dict]) -> int:
        """Store the memories of chat exchanges read back from the log (`unremembered`), one exchange at a time,
        each marked done once stored (or waiting in facts_pending); returns how many exchanges."""
        exchanges: dict[Any, list[dict]] = {}
        for e in entries:
            exchanges.setdefault(e.get("turn") or e["seq"], []).append(e)
        for group in exchanges.values():
            exchange = [
                {"role": e["role"], "content": e["content"], "seq": e["seq"], "ts": e.get("created_at")} for e in group
            ]
            left, given_up = self._remember_now([], exchange)
            self._keep_pending([], left, given_up)
            self._mark([e["seq"] for e in group])
        return len(exchanges)

    def close(self) -> None:
        """Finish background work (every queued exchange is stored before this returns)."""
        if self.worker is not None:
            self.worker.close()
