"""`MemoryToolMemory`, the memory-tool chat stage. Taught in 06_memory_tool, section 'Watch the model use it'.

The chat stage where the model keeps its own memory with the memory tool, per user, in MongoDB.

The same `turn(text)` as every stage (helpers/memory/history.py). One turn:
    load the session {window, version} → request: persona + MEMORY_TOOL_GUIDANCE in `system`, the window + the
    user's message in `messages`, `tools: [{"type": "memory_20250818", "name": "memory"}]` → the tool loop
    (helpers/memory_tool/loop.py: the SDK's tool_runner; the model views, reads and edits its /memories files in
    MongoDB through helpers/memory_tool/backend.py; at most `max_iterations` requests) → the reply → log both
    messages → the window grows by the exchange and is trimmed by whole exchanges to `budget` tokens → save under
    the version guard → the log entries become 'ok'.

What persists, and why: the user's files (across sessions: the memory the model keeps) and, per session, a
window of the recent exchanges as bounded memory keeps them (04), with no summary: what leaves the window is
remembered only if the model wrote it to a file, which is the point of this stage. The window holds the user's
text and the final reply, not the turn's tool calls and results: the files are the memory, and an old tool result
would resend a file's stale text. The log keeps each turn's commands (command, paths, ok; no file text).

A user erased while a turn runs (`--forget-user` from another process): the session document is gone when the
reply arrives, so the turn ends with TurnError and appends, saves and recreates nothing (a file the model wrote
after the erasure, within that turn, stays: the next `--forget-user` erases it).

What a turn reports (TurnResult): `request` is the LAST request of the loop as sent (window, message, every
command and result: what "recall in request" scores), `input_tokens`/`output_tokens` are that request's (the chat
call, as at every stage); the whole turn's calls and tokens are in `last` and `stats`, and with a ledger every
request is priced ("memory_tool" for the calls that ran commands: memory upkeep, apart from "chat").
"""

from __future__ import annotations

import random
import time
import uuid
from pathlib import Path
from typing import Any

import anthropic
from pymongo.errors import ConnectionFailure, PyMongoError

from helpers.config import Settings
from helpers.conversation import strip_meta, text_of
from helpers.db.store import StoreError
from helpers.memory.errors import SessionConflict, TurnError, explain, explain_store
from helpers.memory.fold import (
    committed_exchanges,
    confirm_turns,
    new_turn_id,
    session_id_from_file,
    settle_interrupted,
)
from helpers.memory.history import MemoryBase, TurnResult, check_user_text, reply_text, request_input_tokens
from helpers.memory.window import trim, window_tokens
from helpers.memory_tool.backend import MongoMemoryTool
from helpers.memory_tool.loop import DEFAULT_MAX_ITERATIONS, run_tool_loop
from helpers.prompts import MEMORY_TOOL_GUIDANCE, SCOUT_PERSONA
from helpers.tokens import local_tokens

__all__ = ["MemoryToolMemory"]


class MemoryToolMemory(MemoryBase):
    """The model keeps its own memory: the platform's memory tool on MongoDB, plus a window of this session."""

    stage = "memory_tool"
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
        system: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        ledger: Any = None,
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        tool: MongoMemoryTool | None = None,
    ):
        super().__init__(
            client, settings, system=SCOUT_PERSONA if system is None else system, model=model,
            max_tokens=max_tokens, ledger=ledger,
        )  # fmt: skip
        if session_id is None:
            session_id = session_id_from_file(session_file) if session_file else uuid.uuid4().hex
        self.store, self.user_id, self.session_id = store, user_id, session_id
        self.budget = budget or self.settings.window_budget
        self.max_iterations = max_iterations
        self.tool = tool if tool is not None else MongoMemoryTool(store, user_id, settings=self.settings)
        self.turn_id: str | None = None  # the turn in flight (or the last one): settle_failed_turn goes by it
        self.last: dict = {}
        self.stats = {
            "turns": 0, "calls": 0, "commands": 0, "command_errors": 0, "capped": 0, "conflicts": 0,
            "count_calls": 0, "token_recounts": 0,
        }  # fmt: skip

    # -- the session and the request
    def system_prompt(self) -> str:
        """The persona, then the memory tool guidance (helpers.prompts.MEMORY_TOOL_GUIDANCE)."""
        return f"{self.system}\n\n{MEMORY_TOOL_GUIDANCE}" if self.system else MEMORY_TOOL_GUIDANCE

    def load(self, create: bool = True) -> dict:
        """The session document; a missing one is created (or, with create=False, built in memory)."""
        fresh = {"window": [], "base_tokens": None, "persona": None}
        doc = self.store.load_session(self.user_id, self.session_id)
        if doc is None:
            if not create:
                return {"version": 0, **fresh}
            doc = self.store.create_session(self.user_id, self.session_id, fresh)
        return {**fresh, **doc}

    def _request_for(self, session: dict, text: str) -> dict:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": self.system_prompt(),
            "messages": [*(strip_meta(m) for m in session["window"]), {"role": "user", "content": text}],
            "tools": [self.tool.to_dict()],
        }

    def build_request(self, text: str) -> dict:
        """The first request the next turn would send for `text` (nothing is sent or stored)."""
        return self._request_for(self.load(create=False), text)

    # -- tokens
    def base_tokens(self, session: dict) -> int:
        """Tokens of the framing, system prompt and tool definition (one count_tokens call per session)."""
        if session.get("base_tokens") is not None and session.get("persona") == self.system_prompt():
            return session["base_tokens"]
        self.stats["count_calls"] += 1
        counted = self.client.beta.messages.count_tokens(
            model=self.model,
            system=self.system_prompt(),
            tools=[self.tool.to_dict()],
            messages=[{"role": "user", "content": "."}],
        )
        return counted.input_tokens - 1

    def tokens_of_text(self, text: str) -> int:
        """Tokens of one message's text, measured (two count_tokens calls)."""
        self.stats["count_calls"] += 2
        count = self.client.messages.count_tokens
        full = count(model=self.model, messages=[{"role": "user", "content": text}]).input_tokens
        empty = count(model=self.model, messages=[{"role": "user", "content": "."}]).input_tokens - 1
        return max(1, full - empty)

    # -- one turn
    def turn(self, text: str) -> TurnResult:
        """One turn; see the module docstring. Raises EmptyMessageError / TurnError (the message is kept)."""
        check_user_text(text)
        try:
            return self._turn(text)
        except (PyMongoError, StoreError) as err:
            raise TurnError(explain_store(err), text, err) from err

    def _turn(self, text: str) -> TurnResult:
        started = time.perf_counter()
        self.turn_id = None
        try:
            session = self.load()
        except ConnectionFailure:  # the local server went away since the last turn: restart it once
            if not self.store.reconnect():
                raise
            session = self.load()
        request = self._request_for(session, text)
        turn = self.turn_id = new_turn_id()
        user_seq = self.store.append_log(
            self.user_id, self.session_id, "user", text, status="pending", extra={"turn": turn}
        )
        self.tool.reset()
        self.tool.context = {"session_id": self.session_id, "turn": turn}
        try:
            base = self.base_tokens(session)  # one count_tokens call when the session has none stored
            loop = run_tool_loop(
                self.client, request, self.tool, max_iterations=self.max_iterations, ledger=self.ledger
            )
            failure = self.tool.failure
            reply = reply_text(loop.final) if loop.messages and failure is None else ""
        except anthropic.APIError as err:
            self._unanswered(user_seq, f"{err.__class__.__name__}: {getattr(err, 'message', err)}")
            raise TurnError(explain(err), text, err) from err
        if failure is not None:
            self._unanswered(user_seq, f"memory store: {failure.__class__.__name__}")
            raise TurnError(explain_store(failure), text, failure) from failure
        if not reply.strip():
            stop = loop.final.stop_reason if loop.messages else None
            self._unanswered(user_seq, f"no reply (stop_reason {stop})")
            raise TurnError(
                f"the model ended the turn without a reply (stop_reason {stop!r} after {len(loop.messages)} calls); "
                "your message is saved — try again.",
                text,
            )
        if self.store.load_session(self.user_id, self.session_id) is None:
            raise self._erased(text)
        final = loop.final
        commands = list(self.tool.commands)
        asst_seq = self.store.append_log(
            self.user_id,
            self.session_id,
            "assistant",
            reply,
            tokens=final.usage.output_tokens,
            status="pending",
            reply_to=user_seq,
            extra={"turn": turn, "commands": commands, "calls": len(loop.messages)},
        )
        user_tokens = request_input_tokens(loop.messages[0].usage) - base - window_tokens(session["window"])
        if user_tokens < 1:  # the parts do not add up (a count that drifted): measure the message itself
            self.stats["token_recounts"] += 1
            try:
                user_tokens = self.tokens_of_text(text)
            except anthropic.APIError:  # the reply is in: never lose the turn over a count; the local BPE's count
                user_tokens = local_tokens(text)
        exchange = [
            {"role": "user", "content": text, "tokens": user_tokens, "seq": user_seq, "turn": turn},
            {"role": "assistant", "content": reply, "tokens": final.usage.output_tokens, "seq": asst_seq, "turn": turn},
        ]
        saved, dropped = self._commit(session, exchange, base)
        confirm_turns(self.store, self.user_id, self.session_id, [turn])
        self._count(loop, commands)
        self.last = {
            "calls": len(loop.messages),
            "capped": loop.capped,
            "commands": commands,
            "input_tokens_all": loop.input_tokens,
            "output_tokens_all": loop.output_tokens,
            "seconds": time.perf_counter() - started,
        }
        return TurnResult(
            reply,
            request_input_tokens(final.usage),
            final.usage.output_tokens,
            final.stop_reason,
            loop.final_request,
            self.stage,
            session_id=self.session_id,
            user_seq=user_seq,
            assistant_seq=asst_seq,
            user_tokens=user_tokens,
            window_tokens=window_tokens(saved["window"]),
            summary="",
            dropped=len(dropped),
            version=saved["version"],
        )

    def _erased(self, text: str) -> TurnError:
        return TurnError(
            "this user's memory was erased (--forget-user) while the turn ran: nothing of the turn was kept", text
        )

    def _unanswered(self, user_seq: int, error: str) -> None:
        self.store.set_log_status(self.user_id, self.session_id, [user_seq], "unanswered", error=error[:500])

    def _count(self, loop: Any, commands: list[dict]) -> None:
        self.stats["turns"] += 1
        self.stats["calls"] += len(loop.messages)
        self.stats["commands"] += len(commands)
        self.stats["command_errors"] += sum(1 for c in commands if not c["ok"])
        self.stats["capped"] += int(loop.capped)

    def _commit(
        self, session: dict, exchange: list[dict], base: int | None, *, replace: bool = False
    ) -> tuple[dict, list[dict]]:
        """Append `exchange` to the window (or, with `replace`, make it the window), trim by whole exchanges, save
        under the version guard; on a conflict (another process saved first, or the session was erased) do it again
        on the session as it is now."""
        for attempt in range(self.MAX_SAVE_ATTEMPTS):
            window, dropped = trim([*([] if replace else session["window"]), *exchange], self.budget)
            fields = {"window": window, "persona": self.system_prompt(), "base_tokens": base}
            saved = self.store.save_session(self.user_id, self.session_id, session["version"], fields)
            if saved is not None:
                return saved, dropped
            self.stats["conflicts"] += 1
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
            current = self.store.load_session(self.user_id, self.session_id)
            if current is None:  # erased (--forget-user) while this turn ran: write nothing of it back
                raise self._erased(exchange[0]["content"] if exchange else "")
            session = {"window": [], "base_tokens": None, "persona": None, **current}
        raise SessionConflict(
            f"session {self.session_id!r} changed {self.MAX_SAVE_ATTEMPTS} times while saving this turn; "
            "too many processes writing it at once? The turn's messages are in the log: run --rebuild."
        )

    # -- after a crash, and for displays
    def settle_interrupted(self) -> dict:
        """On start: log entries a killed process left 'pending' become 'ok' (committed) or 'unanswered'."""
        return settle_interrupted(self.store, self.user_id, self.session_id)

    def rebuild(self) -> dict:
        """Recompute the window from the committed log (after a crash or a manual edit); the files are untouched."""
        session = self.load()
        messages = committed_exchanges(
            session, self.store.logs_for(self.user_id, self.session_id), set(), self.tokens_of_text
        )
        saved, dropped = self._commit(session, messages, session.get("base_tokens"), replace=True)
        return {
            "messages": len(messages),
            "window": len(saved["window"]),
            "dropped": len(dropped),
            "version": saved["version"],
        }

    def state(self) -> dict:
        """What `--show-state` prints: the window the next turn resends and the user's memory files."""
        session = self.load(create=False)
        window = [
            {"role": m["role"], "text": text_of(m), "tokens": m.get("tokens"), "seq": m.get("seq")}
            for m in session["window"]
        ]
        files = [{"path": f.path, "bytes": f.size, "updated_at": f.updated_at} for f in self.tool.files()]
        return {
            **super().state(),
            "session_id": self.session_id,
            "user_id": self.user_id,
            "window": window,
            "window_tokens": window_tokens(session["window"]),
            "budget": self.budget,
            "version": session.get("version", 0),
            "log_count": self.store.count_logs(self.user_id, self.session_id),
            "files": files,
            "gauge": {
                "system": session.get("base_tokens"),
                "summary": 0,
                "memories": 0,
                "window": window_tokens(session["window"]),
                "budget": self.budget,
            },
            "last": self.last,
        }
