"""Long-term memory as BoundedMemory's retriever; VectorMemory wires the two. Taught in 05_vector_memory, "Extraction → storage → retrieval → injection"."""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import anthropic

from helpers.config import Settings
from helpers.conversation import strip_meta, text_of
from helpers.memory.bounded import BoundedMemory
from helpers.memory.budget import BudgetPolicy, plan
from helpers.memory.facts import FactMemory, FactWorker
from helpers.memory.forget import ErasureGuard
from helpers.memory.history import TurnResult
from helpers.memory.importer import import_dated
from helpers.memory.pending import is_retryable
from helpers.memory.retriever import Recall
from helpers.memory.window import window_tokens
from helpers.retrieval import MemoryIndex
from helpers.retrieval.inject import Packing, above_floor, format_block, pack_by_value, with_neighbours
from helpers.retrieval.schema import TurnUnit
from helpers.tokens import text_counter

__all__ = ["LongTermMemory", "VectorMemory", "REQUEST_FRAMING", "MESSAGE_FRAMING"]

REQUEST_FRAMING = 12  # tokens the Messages API adds around a request (roles, separators), kept off the budget
MESSAGE_FRAMING = 4  # tokens it adds per message (role marker and separator), counted with each window message


class LongTermMemory(ErasureGuard):
    """Per-user facts and past turns, retrieved per query and packed into the request; the retriever of a BoundedMemory.

    Per turn: retrieve facts and earlier turns for the user's message (hybrid ranking, this user only) →
    pack them by value per token → a dated block in the system prompt, beside the rolling summary →
    (the bounded turn) → store both turns (speaker, date) and extract facts (inline, or on a background
    worker). With `context_budget`, one budget covers the whole request (persona, summary, memories, window,
    new message), allocated by evidence (helpers.memory.budget); else memories get `memory_budget` of their own.
    """

    FACTS_PENDING_MAX = 20  # exchanges kept for a later long-term memory write; older ones are given up on

    def __init__(
        self,
        *,
        index: MemoryIndex | None = None,
        facts: FactMemory | None = None,
        memory_budget: int | None = None,
        k: int = 8,
        mode: str = "hybrid",
        background: bool = False,
        embedder: Any = None,
        half_life_days: float | None = None,
        context_budget: int | None = None,
        policy: BudgetPolicy | None = None,
        packing: Packing | None = None,
        units: str = "turns",
        candidates: int = 100,
    ):
        if units not in ("turns", "exchanges"):
            raise ValueError(f"units must be 'turns' or 'exchanges', got {units!r}")
        if context_budget is not None and (not isinstance(context_budget, int) or context_budget < 1):
            raise ValueError(f"context_budget must be a positive int (CONTEXT_BUDGET_TOKENS), got {context_budget!r}")
        self._given = (index, facts, embedder, half_life_days, background)
        self.memory_budget, self.context_budget = memory_budget, context_budget
        self.policy, self.packing = policy or BudgetPolicy(), packing or Packing()
        self.k, self.mode, self.units, self.candidates = k, mode, units, candidates
        self.lexical_weight: float | None = None  # None: the index's LEXICAL_WEIGHT
        self.memory: BoundedMemory | None = None
        self._retry: list[tuple] = []
        self.ranked: list = []  # the candidates the last search ranked (the widget counts those above the floor)

    def attach(self, memory: BoundedMemory) -> None:
        """Serve `memory`: build the index and fact memory on its store and client, share its stats."""
        index, facts, embedder, half_life_days, background = self._given
        self.memory = memory
        self.index = index or (
            facts.index if facts is not None else MemoryIndex(memory.store, embedder, half_life_days=half_life_days)
        )
        self.facts = facts or FactMemory(
            memory.store, self.index.embedder, memory.client, memory.settings, memory.ledger, index=self.index
        )
        self.memory_budget = self.memory_budget or memory.settings.memory_budget
        self._count = text_counter(memory.client, memory.tokens_of_text)  # one counter, chosen once per client
        self.worker = FactWorker(handler=self._remember_job) if background else None
        memory.stats.update({"memory_failures": 0, "memory_skipped": 0, "memory_s": 0.0})

    # -- counting
    def count(self, text: str) -> int:
        """Tokens of `text` as the model in use counts them (helpers.tokens.text_counter, chosen in `attach`)."""
        return self._count(text)

    # -- retrieval and the request
    def _since(self, session: dict) -> int | None:
        return session.get("conversation_start")

    def outside_window(self, session: dict) -> int:
        """Turns memory holds outside the stored window (every remembered turn, less the window's messages)."""
        return max(0, self.index.count(self.memory.user_id) - len(session.get("window") or []))

    def block(self, hits: list, session: dict) -> str:
        """The dated memory block for `hits` (helpers.retrieval.inject.format_block)."""
        return format_block(hits, session_id=self.memory.session_id, since_seq=self._since(session))

    def pack(self, hits: list, tokens: int, session: dict) -> list:
        """The hits worth their tokens within `tokens` (helpers.retrieval.inject.pack_by_value)."""
        return pack_by_value(
            hits,
            tokens,
            self.count,
            packing=self.packing,
            session_id=self.memory.session_id,
            since_seq=self._since(session),
        )

    def search(self, text: str, limit: int) -> list:
        """This user's memories for `text`, best first (helpers.retrieval.index.MemoryIndex.search)."""
        self.ranked = self.index.search(
            self.memory.user_id, text, k=limit, mode=self.mode, lexical_weight=self.lexical_weight
        )
        return self.ranked

    def retrieve(self, text: str, session: dict | None = None) -> tuple[str, list]:
        """The memory block for `text` within `memory_budget` and the hits in it (none already in the window)."""
        session = session or {}
        in_window = {(self.memory.session_id, m.get("seq")) for m in session.get("window", [])}
        hits = [
            h
            for h in self.search(text, self.k + len(in_window))
            if ((h.source or {}).get("session_id"), (h.source or {}).get("seq")) not in in_window
        ]
        packed = self.pack(hits[: self.k], self.memory_budget, session)
        return self.block(packed, session), packed

    def recall(self, session: dict, text: str) -> Recall:
        """What this request carries: memories within `memory_budget`, or one context budget planned by evidence."""
        if self.context_budget is None:
            block, hits = self.retrieve(text, session)
            return Recall(block, hits, extra_tokens=self.count("\n\n" + block) if block else 0)
        return self._planned(session, text)

    def _planned(self, session: dict, text: str) -> Recall:
        """One context budget: window suffix, summary and memories chosen by helpers.memory.budget.plan."""
        memory, since = self.memory, self._since(session)

        def expand(packed, tokens, exclude):
            return with_neighbours(
                self.index,
                memory.user_id,
                packed,
                tokens,
                self.count,
                packing=self.packing,
                exclude=exclude,
                session_id=memory.session_id,
                since_seq=since,
            )

        hits = self.search(text, self.candidates)
        summary = session.get("summary") or ""
        with_summary, persona_only = memory.system_prompt({"summary": summary}), memory.system_prompt({})
        summary_tokens = self.count(with_summary) - self.count(persona_only) if summary else 0
        # the budget is the whole request: persona and the new message come off it first
        room = max(0, self.context_budget - self.count(persona_only) - self.count(text) - REQUEST_FRAMING)
        sent, summary_sent, packed, split = plan(
            session["window"],
            summary_tokens,
            hits,
            room,
            session_id=memory.session_id,
            block_tokens=lambda h: self.count("\n\n" + self.block(h, session)),
            pack=lambda h, tokens: self.pack(h, tokens, session),
            expand=expand,
            policy=self.policy,
            framing=MESSAGE_FRAMING,
            remembered=self.outside_window(session),
        )
        unsent = window_tokens(session["window"]) - window_tokens(sent)
        extra = split.memories - unsent - (0 if summary_sent else summary_tokens)
        return Recall(
            self.block(packed, session), packed, window=sent, summary_sent=summary_sent, split=split, extra_tokens=extra
        )

    # -- writing long-term memory
    def before_turn(self) -> None:
        """Background mode: exchanges whose memory write failed are queued again first."""
        if self.worker is not None:
            while self._retry:
                user_id, messages, source, life = self._retry.pop(0)
                self.worker.submit(user_id, messages, source, life=life)

    def committed(self, session: dict, exchange: list[dict]) -> None:
        """Inline mode: store the committed exchange (and earlier failures) now; background mode: after the turn."""
        if self.worker is None:  # never for a user erased meanwhile (helpers.memory.forget)
            seqs = [m.get("seq") for m in [*exchange, *(session.get("facts_pending") or [])]]
            self._written_while_alive(self.memory.life, seqs, lambda: self._remember_committed(session, exchange))

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
        if self._written_while_alive(life, [m["seq"] for m in exchange], lambda: self._index_turns(exchange)):
            self.worker.submit(memory.user_id, [strip_meta(m) for m in exchange], source, life=life)

    def _index_turns(self, exchange: list[dict], when: Any = None) -> None:
        if self.units == "turns":
            units = [
                TurnUnit(m["seq"], m["role"], text_of(m), m.get("ts") or when, m.get("speaker"))
                for m in exchange
                if m.get("seq") is not None
            ]
            self.index.add_turns(self.memory.user_id, self.memory.session_id, units)

    def _remember_job(self, user_id: str, messages: list[dict], source: dict, life: Any = None) -> None:
        try:
            remember = partial(self.facts.remember, user_id, messages, source, episode=self.units == "exchanges")
            self._written_while_alive(life, [source.get("seq")], remember)
        except Exception as err:
            # retried on the next turn, as inline mode does: a non-retryable model error (400/404 …) is given up
            # on and counted, and the list keeps at most FACTS_PENDING_MAX (the oldest are given up on)
            if isinstance(err, anthropic.APIError) and not is_retryable(err):
                self.memory.stats["memory_skipped"] += 1
            else:
                self._retry.append((user_id, messages, source, life))
                while len(self._retry) > self.FACTS_PENDING_MAX:
                    self._retry.pop(0)
                    self.memory.stats["memory_skipped"] += 1
            raise

    def _remember_committed(self, session: dict, exchange: list[dict]) -> None:
        """Store this exchange (and earlier failures) in long-term memory; update `facts_pending` atomically."""
        earlier = list(session.get("facts_pending") or [])
        left, given_up = self._remember_now(earlier, exchange)
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

    def close(self) -> None:
        """Finish background work (every queued exchange is stored before this returns)."""
        if self.worker is not None:
            self.worker.close()

    # -- inspection and import
    def describe(self, session: dict, recall: Recall | None, gauge: dict) -> dict:
        """The `state()` fields long-term memory adds; `gauge` gets what the last request sent."""
        hits, split = (recall.hits, recall.split) if recall is not None else ([], None)
        gauge["memories"] = self.count("\n\n" + recall.block) if hits else 0
        if split is not None:  # what the last request sent, within the one context budget
            gauge.update(
                {
                    "window": split.window,
                    "summary": split.summary,
                    "memories": split.memories,
                    "budget": split.budget,
                    "memory_cap": split.memory_cap,
                    "evidence": split.evidence,
                }
            )
        elif self.context_budget is not None:
            gauge.update({"budget": self.context_budget, "memory_cap": 0, "evidence": "no question yet"})
        floor = self.packing.min_similarity
        return {
            "memories": [h.to_dict() for h in self.facts.active(self.memory.user_id)],
            "stored_turns": len(self.index.all(self.memory.user_id, kinds=("episode",))),
            "retrieved": [h.to_dict() for h in hits],
            "memory_budget": self.memory_budget,
            "min_similarity": floor,
            "ranked": len(self.ranked) if recall is not None else 0,
            "above_floor": sum(above_floor(h, floor) for h in self.ranked) if recall is not None else 0,
            "context_budget": self.context_budget,
            "facts_pending": len(session.get("facts_pending", [])),
            "facts_skipped": session.get("facts_skipped") or 0,
            "gauge": gauge,
            "split": split.to_dict() if split is not None else None,
        }

    def import_transcript(self, turns: list) -> dict:
        """Import a (dated) transcript in one batch: logs, one fold of window + summary, turns and facts indexed.

        `turns` are {role, content} dicts (optionally `ts`, `speaker`, `conversation`) or
        helpers.memory.transcript.Turn; their times become the memories' dates. No chat-model call; one summary
        call; fact extraction over several exchanges per call (helpers.memory.importer).
        """
        result = import_dated(self.memory, turns)
        result["memories"] = [h.to_dict() for h in self.facts.active(self.memory.user_id)]
        return result


class VectorMemory(BoundedMemory):
    """Bounded memory plus long-term vector memory (a LongTermMemory retriever): per-user facts and past turns,
    retrieved per query. With `context_budget`, one budget covers the whole request; else the window has `budget`,
    memories `memory_budget`. Taught in 05_vector_memory.
    """

    stage = "vector"

    def __init__(
        self,
        client: anthropic.Anthropic,
        settings: Settings | None = None,
        *,
        store: Any,
        index: MemoryIndex | None = None,
        facts: FactMemory | None = None,
        memory_budget: int | None = None,
        k: int = 8,
        mode: str = "hybrid",
        background: bool = False,
        embedder: Any = None,
        half_life_days: float | None = None,
        context_budget: int | None = None,
        policy: BudgetPolicy | None = None,
        packing: Packing | None = None,
        units: str = "turns",
        candidates: int = 100,
        **kwargs: Any,
    ):
        retriever = LongTermMemory(
            index=index,
            facts=facts,
            memory_budget=memory_budget,
            k=k,
            mode=mode,
            background=background,
            embedder=embedder,
            half_life_days=half_life_days,
            context_budget=context_budget,
            policy=policy,
            packing=packing,
            units=units,
            candidates=candidates,
        )
        if context_budget is not None and not kwargs.get("budget"):
            kwargs["budget"] = context_budget  # the stored window may hold the whole budget; each request chooses
        super().__init__(client, settings, store=store, retriever=retriever, **kwargs)

    @property
    def long_term(self) -> LongTermMemory:
        """The long-term memory this bounded memory asks each turn: `.index`, `.facts`, budgets and knobs."""
        return self.retriever

    def retrieve(self, text: str, session: dict | None = None) -> tuple[str, list]:
        """The memory block for `text` within `memory_budget` and the hits in it (none already in the window)."""
        return self.retriever.retrieve(text, session)
