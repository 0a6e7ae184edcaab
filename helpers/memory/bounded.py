"""Bounded memory: a token-budgeted window plus a rolling summary in MongoDB. Taught in 04_bounded_memory_mongodb, "One turn, arrow by arrow"."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anthropic
from pymongo.errors import ConnectionFailure, PyMongoError

from helpers.config import Settings
from helpers.conversation import group_exchanges, strip_meta
from helpers.db.crash import crash_point
from helpers.db.store import StoreError
from helpers.memory.caching import (
    DEFAULT_PACE_SECONDS,
    CacheLayout,
    Conditions,
    cache_control_for,
    choose_layout,
    padded_system,
    with_cache_breakpoints,
)
from helpers.memory.commit import SessionCommit
from helpers.memory.errors import TurnError, explain, explain_store
from helpers.memory.fold import new_turn_id, session_id_from_file
from helpers.memory.history import MemoryBase, TurnResult, check_user_text, reply_text, request_input_tokens
from helpers.memory.pending import PENDING_MAX_COUNT, PENDING_MAX_TOKENS
from helpers.memory.retriever import Recall, Retriever
from helpers.memory.state import SessionState
from helpers.memory.summary import system_with_summary
from helpers.memory.window import window_tokens
from helpers.prompts import SCOUT_PERSONA

__all__ = ["BoundedMemory", "session_id_from_file"]


class BoundedMemory(SessionCommit, SessionState, MemoryBase):
    """A token-budgeted window plus a rolling summary, persisted in MongoDB. Taught in 04_bounded_memory_mongodb.

    One turn: load session → build request (persona + summary in `system`; window + new user turn in
    `messages`) → `messages.create` → exact tokens from `usage` → append exchange → trim by whole
    exchanges → merge dropped into the summary → save (version guard) + log entries.
    With a `retriever` (long-term memory, notebook 05) the request also carries what it recalls, and
    each committed exchange is handed to it to remember. With `cache_aware=True` the window grows to a high
    mark, then is cut to a low mark in one go (one summary fold), and the request carries prompt-cache
    breakpoints, so its prefix is read from the cache between folds. The marks, the breakpoints and their TTL
    are the layout helpers.memory.caching chooses for the model: the budget's (high = `budget`, low =
    `low_water` x budget), or a larger window (cacheable after a fold, folded less often) when the cost model
    says that is cheaper at `pace_seconds` between turns (`cache_ttl`: force "5m" or "1h";
    `grow_to_cache=False`: keep the budget's marks, choose only breakpoints and TTL). With `pad_to_cache` as well
    (True: explicit neutral filler; a string: the app's own text to pin, topped up with filler if short) the persona
    is followed by pinned text until that block alone reaches the model's minimum cacheable length, and it carries
    its own breakpoint before the summary: cacheable from turn 1, read from turn 2, and still read after every
    fold (helpers.memory.caching, 'Padded to the minimum').
    The write path (commit an exchange, rebuild from the logs) is helpers/memory/commit.py; what `state()` shows
    and the token gauge, helpers/memory/state.py.
    """

    stage = "bounded"
    MAX_SAVE_ATTEMPTS = 20

    def __init__(
        self,
        client: anthropic.Anthropic,
        settings: Settings | None = None,
        *,
        store: Any,
        user_id: str = "default",
        session_id: str | None = None,
        session_file: str | Path | None = None,
        budget: int | None = None,
        summary_max_tokens: int | None = None,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        ledger: Any = None,
        check_retention: bool = True,
        pending_max_tokens: int = PENDING_MAX_TOKENS,
        pending_max_count: int = PENDING_MAX_COUNT,
        retriever: Retriever | None = None,
        cache_aware: bool = False,
        low_water: float = 0.5,
        cache_ttl: str | None = None,
        pace_seconds: float = DEFAULT_PACE_SECONDS,
        grow_to_cache: bool = True,
        pad_to_cache: bool | str = False,
    ):
        self.turn_id: str | None = None  # the turn in flight (or the last one): settle_failed_turn goes by it
        super().__init__(
            client,
            settings,
            system=SCOUT_PERSONA if system is None else system,
            model=model,
            max_tokens=max_tokens,
            ledger=ledger,
        )
        if session_id is None:
            session_id = session_id_from_file(session_file) if session_file else uuid.uuid4().hex
        self.store = store
        self.user_id = user_id
        self.session_id = session_id
        self.budget = budget or self.settings.window_budget
        self.summary_max_tokens = summary_max_tokens or self.settings.summary_max_tokens
        self.check_retention = check_retention
        self.pending_max_tokens, self.pending_max_count = pending_max_tokens, pending_max_count
        if not 0 <= low_water < 1:
            raise ValueError(f"low_water is the share of the budget kept after a fold, in [0, 1); got {low_water!r}")
        self.cache_aware, self.low_water = cache_aware, low_water
        if cache_ttl is not None:
            cache_control_for(cache_ttl)  # a ValueError naming the two TTLs
        if not isinstance(pace_seconds, (int, float)) or pace_seconds < 0:
            raise ValueError(f"pace_seconds is the expected time between turns, in seconds >= 0; got {pace_seconds!r}")
        self.cache_ttl, self.pace_seconds, self.grow_to_cache = cache_ttl, float(pace_seconds), grow_to_cache
        self.layout: CacheLayout | None = None  # the cache layout the last request or fold used (cache_aware)
        self.pinned_tokens = 0  # padded: tokens of persona + pinned text, the block with its own breakpoint
        if pad_to_cache:
            if not cache_aware:
                raise ValueError("pad_to_cache pads the cached prefix: it needs cache_aware=True")
            pinned = pad_to_cache if isinstance(pad_to_cache, str) else None
            self.system, self.pinned_tokens = padded_system(self.client, self.model, self.system, pinned)
        self.stats = {
            "turns": 0,
            "conflicts": 0,
            "count_calls": 0,
            "summary_failures": 0,
            "unsummarised": 0,
            "token_recounts": 0,
        }
        self.last: dict = {}
        self.recall: Recall | None = None  # what the retriever added to the last request built
        self.life: Any = None  # created_at of the session this object works on; gone or another: it was erased
        self.retriever = retriever
        if retriever is not None:
            retriever.attach(self)

    # -- session
    def _fresh(self) -> dict:
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "version": 0,
            "window": [],
            "summary": "",
            "summary_tokens": 0,
            "summary_covers": None,
            "retention": None,
            "missing": [],
            "pending": [],
            "base_tokens": None,
            "persona": self.system,
        }

    def load(self, create: bool = True) -> dict:
        """The session document; a missing one is created under the same id (or, with create=False, built in memory)."""
        doc = self.store.load_session(self.user_id, self.session_id)
        if self.life is not None and (doc or {}).get("created_at") != self.life:
            self.forgotten()  # the user was erased (helpers.memory.forget) while this object ran
        if doc is None:
            if not create:
                return self._fresh()
            fresh = self._fresh()
            doc = self.store.create_session(
                self.user_id,
                self.session_id,
                {k: v for k, v in fresh.items() if k not in ("user_id", "session_id", "version")},
            )
        self.life = doc.get("created_at")
        return {**self._fresh(), **doc}

    def forgotten(self) -> None:
        """The session was erased under this running memory: drop what it holds (the last request, what the
        retriever keeps) and start afresh; nothing of the erased conversation is written back."""
        self.life, self.recall, self.last = None, None, {}
        self.stats["erased"] = self.stats.get("erased", 0) + 1
        if hasattr(self.retriever, "forgotten"):
            self.retriever.forgotten()

    def alive(self, life: Any) -> bool:
        """True while the session this object saw as `life` still exists (not erased since): work for it may be
        written. One indexed lookup."""
        return life is not None and self.store.session_created_at(self.user_id, self.session_id) == life

    def system_prompt(self, session: dict) -> str:
        """Persona plus the session's summary, marked as data."""
        return system_with_summary(self.system, session.get("summary"))

    def _request_for(self, session: dict, text: str) -> dict:
        """The request for `text`: persona + summary (+ recalled memories) in `system`, window + `text` in `messages`.

        Cache-aware, recalled memories go last, in the newest message, so the cached prefix before them holds."""
        recall = self.recall = self.retriever.recall(session, text) if self.retriever is not None else None
        window, system, newest = session["window"], self.system_prompt(session), text
        if recall is not None:
            window = session["window"] if recall.window is None else recall.window
            system = system if recall.summary_sent else self.system_prompt({**session, "summary": ""})
            if recall.block and self.cache_aware:
                newest = [{"type": "text", "text": text}, {"type": "text", "text": f"\n\n{recall.block}"}]
            system = f"{system}\n\n{recall.block}" if recall.block and newest is text else system
        request = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": system,
            "messages": [*(strip_meta(m) for m in window), {"role": "user", "content": newest}],
        }
        if not self.cache_aware or not self.cache_layout(session).breakpoints:
            return request
        marks = (-1,) if newest is text else (-2,)  # memories change every turn: cache up to the window's end
        if self.pinned_tokens and isinstance(system, str) and len(system) > len(self.system) + 1:
            # padded: persona + pinned text is its own block (and entry); the summary after it, joined by one newline
            n = len(self.system)
            request["system"] = [{"type": "text", "text": system[:n]}, {"type": "text", "text": system[n + 1 :]}]
        out = with_cache_breakpoints(request, messages=marks, cache_control=self.layout.cache_control)
        if self.pinned_tokens and len(out["system"]) > 1:
            out["system"][0]["cache_control"] = dict(self.layout.cache_control)
        return out

    def cache_layout(self, session: dict, window: list[dict] | None = None, base: int | None = None) -> CacheLayout:
        """The cache layout for this session (helpers.memory.caching), from its measured tokens: base (persona +
        summary) and the mean exchange of `window` (default the session's; before any exchange, the reply cap).
        Kept as `self.layout`. A retriever that plans each request's window (one context budget) keeps the budget's
        marks: the window sent changes per question, so a larger one would not be read from the cache."""
        window = session["window"] if window is None else window
        exchanges = group_exchanges(list(window))
        base = session.get("base_tokens") if base is None else base
        self.layout = choose_layout(
            Conditions(
                model=self.model,
                budget=self.budget,
                low_water=self.low_water,
                base_tokens=base or 0,
                exchange_tokens=window_tokens(window) / len(exchanges) if exchanges else self.max_tokens,
                summary_tokens=self.summary_max_tokens,
                upkeep_model=self.settings.summary_model,
                pace_seconds=self.pace_seconds,
                ttl=self.cache_ttl,
                max_fold_tokens=self.pending_max_tokens,
                max_fold_messages=self.pending_max_count,
                grow=self.grow_to_cache and getattr(self.retriever, "context_budget", None) is None,
                pinned_tokens=self.pinned_tokens,
            )
        )
        return self.layout

    def build_request(self, text: str) -> dict:
        """The exact request the next turn would send for `text`; reads the store, changes nothing."""
        return self._request_for(self.load(create=False), text)

    # -- tokens
    def base_tokens(self, session: dict) -> int:
        """Framing + persona + summary tokens of this session's requests (one count call when unknown)."""
        if session.get("base_tokens") is not None and session.get("persona") == self.system:
            return session["base_tokens"]
        return self._count_base(self.system_prompt(session))

    def _count_base(self, system: str) -> int:
        self.stats["count_calls"] += 1
        counted = self.client.messages.count_tokens(
            model=self.model, system=system, messages=[{"role": "user", "content": "."}]
        ).input_tokens
        return counted - 1

    def tokens_of_text(self, text: str) -> int:
        self.stats["count_calls"] += 1
        counted = self.client.messages.count_tokens(model=self.model, messages=[{"role": "user", "content": text}])
        return max(1, counted.input_tokens - self._empty_request_tokens())

    def _empty_request_tokens(self) -> int:
        if not hasattr(self, "_empty_tokens"):
            one = self.client.messages.count_tokens(model=self.model, messages=[{"role": "user", "content": "."}])
            self._empty_tokens = one.input_tokens - 1
        return self._empty_tokens

    # -- one turn
    def turn(self, text: str) -> TurnResult:
        """One bounded-memory turn; see the class docstring. Raises EmptyMessageError / TurnError."""
        if self.retriever is not None:
            self.retriever.before_turn()
        check_user_text(text)
        try:
            result = self._turn(text)
        except (PyMongoError, StoreError) as err:  # the database failed: a clear message, not a stack trace
            raise TurnError(explain_store(err, self.store), text, err) from err
        if self.retriever is not None:
            self.retriever.after_turn(result)
        return result

    def _turn(self, text: str) -> TurnResult:
        started = time.perf_counter()
        self.turn_id = None
        try:
            session = self.load()
        except ConnectionFailure:  # the server went away since the last turn; nothing is written yet, so
            if not self.store.reconnect():  # restart the local server / reconnect once and carry on
                raise
            session = self.load()
        request = self._request_for(session, text)
        recall = self.recall
        turn = self.turn_id = new_turn_id()  # every entry of this exchange carries it (settle, rebuild, checks)
        marks = self.retriever.todo_marks() if self.retriever is not None else {}  # owed to long-term memory
        user_seq = self.store.append_log(
            self.user_id, self.session_id, "user", text, status="pending", extra={"turn": turn, **marks}
        )
        crash_point("turn:logged")
        llm_started = time.perf_counter()
        try:
            message = self._call(request)
        except anthropic.APIError as err:
            self.store.set_log_status(
                self.user_id,
                self.session_id,
                [user_seq],
                "unanswered",
                error=f"{err.__class__.__name__}: {getattr(err, 'message', err)}"[:500],
            )
            raise TurnError(explain(err), text, err) from err
        llm_s = time.perf_counter() - llm_started
        reply = reply_text(message)
        usage = message.usage
        asst_seq = self.store.append_log(
            self.user_id,
            self.session_id,
            "assistant",
            reply,
            tokens=usage.output_tokens,
            status="pending",
            reply_to=user_seq,
            extra={"turn": turn, **marks},
        )
        crash_point("turn:replied")
        base = self.base_tokens(session)
        extra = recall.extra_tokens if recall is not None else 0  # this turn's memories: not stored in base
        user_tokens = request_input_tokens(usage) - base - extra - window_tokens(session["window"])
        if user_tokens < 1:  # the parts do not add up (e.g. a count that drifted): measure the message itself
            self.stats["token_recounts"] += 1
            user_tokens = self.tokens_of_text(text)
        exchange = [
            {"role": "user", "content": text, "tokens": user_tokens, "seq": user_seq, "turn": turn},
            {"role": "assistant", "content": reply, "tokens": usage.output_tokens, "seq": asst_seq, "turn": turn},
        ]
        saved, info = self.commit_exchange(session, exchange, base)  # saved = committed; its entries are 'ok'
        self.stats["turns"] += 1
        total_s = time.perf_counter() - started
        self.last = {**info, "llm_s": llm_s, "memory_s": total_s - llm_s - info.get("summary_s", 0.0)}
        return TurnResult(
            reply,
            request_input_tokens(usage),
            usage.output_tokens,
            message.stop_reason,
            request,
            self.stage,
            session_id=self.session_id,
            user_seq=user_seq,
            assistant_seq=asst_seq,
            user_tokens=user_tokens,
            window_tokens=window_tokens(saved["window"]),
            summary=saved.get("summary", ""),
            retention=saved.get("retention"),
            dropped=info["dropped"],
            version=saved["version"],
            retrieved=[h.to_dict() for h in recall.hits] if recall is not None else [],
            split=recall.split.to_dict() if recall is not None and recall.split is not None else None,
        )

    def close(self) -> None:
        """Finish background work of the retriever, if any (every queued exchange is stored before this returns)."""
        if self.retriever is not None:
            self.retriever.close()
