"""Memory strategies behind one `turn(text)` interface: stateless, history list, bounded, vector. Taught in 01–06."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import anthropic

from .config import Settings, load_settings
from .prompts import PLAIN_PERSONA

__all__ = [
    "TurnResult",
    "TurnError",
    "EmptyMessageError",
    "StatelessMemory",
    "HistoryMemory",
    "check_user_text",
    "reply_text",
]


class EmptyMessageError(ValueError):
    """The user message is empty or whitespace only; nothing was sent or stored."""


class TurnError(RuntimeError):
    """A turn failed (model or store); the user's text is kept in `.text` and, where there is a store, in the logs."""

    def __init__(self, message: str, text: str, cause: BaseException | None = None):
        super().__init__(message)
        self.text = text
        self.cause = cause


MAX_USER_CHARS = 200_000  # ~50k tokens: longer input is refused before any call, with a clear message


def check_user_text(text: Any) -> str:
    """Validate one user message: a non-empty str without NUL bytes; returns it unchanged."""
    if not isinstance(text, str):
        raise EmptyMessageError(f"a message must be text, got {type(text).__name__}")
    if not text.strip():
        raise EmptyMessageError("empty message: type something before sending")
    if "\x00" in text:
        raise EmptyMessageError("the message contains a NUL byte; remove control characters and try again")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates (undecodable bytes): the database and the API refuse them
            raise EmptyMessageError("the message is not valid Unicode text (undecodable bytes); "
                                    "re-send it as UTF-8") from None
    if len(text) > MAX_USER_CHARS:
        raise EmptyMessageError(
            f"message too long ({len(text):,} characters > {MAX_USER_CHARS:,}); send it in smaller parts")
    return text


def reply_text(message: anthropic.types.Message) -> str:
    """The text of a Messages API reply (`content[0].text`, joined if there are several text blocks)."""
    return "".join(block.text for block in message.content if getattr(block, "type", "") == "text")


@dataclass
class TurnResult:
    """What one turn produced: the reply, exact token usage, and the request that was sent."""

    reply: str
    input_tokens: int
    output_tokens: int
    stop_reason: str | None
    request: dict
    stage: str
    extra: dict = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


class _Base:
    stage = "base"

    def __init__(self, client: anthropic.Anthropic, settings: Settings | None = None, *, system: str | None = None,
                 model: str | None = None, max_tokens: int | None = None, ledger=None):
        self.client = client
        self.settings = settings or load_settings()
        self.system = PLAIN_PERSONA if system is None else system
        self.model = model or self.settings.chat_model
        self.max_tokens = max_tokens or self.settings.reply_max_tokens
        self.ledger = ledger

    def _messages(self, text: str) -> list[dict]:
        raise NotImplementedError

    def build_request(self, text: str) -> dict:
        """The exact request the next turn would send for `text` (nothing is sent or stored)."""
        request: dict = {"model": self.model, "max_tokens": self.max_tokens, "messages": self._messages(text)}
        if self.system:
            request["system"] = self.system
        return request

    def _call(self, request: dict, purpose: str = "chat") -> anthropic.types.Message:
        message = self.client.messages.create(**request)
        if self.ledger is not None:
            self.ledger.record(purpose, message.model, message.usage)
        return message

    def _after(self, text: str, reply: str, message=None) -> None:
        pass

    def state(self) -> dict:
        """A snapshot for displays (`--show-state`, the widget): same keys at every stage."""
        return {"stage": self.stage, "summary": "", "retention": None, "window": [], "window_tokens": 0,
                "budget": None, "memories": [], "retrieved": []}

    def turn(self, text: str) -> TurnResult:
        """Send one user message and return the reply; raises EmptyMessageError / TurnError."""
        check_user_text(text)
        request = self.build_request(text)
        try:
            message = self._call(request)
        except anthropic.APIError as err:
            raise TurnError(_explain(err), text, err) from err
        reply = reply_text(message)
        self._after(text, reply, message)
        return TurnResult(reply, message.usage.input_tokens, message.usage.output_tokens, message.stop_reason,
                          request, self.stage)


class StatelessMemory(_Base):
    """The goldfish: every call sends only the new message. Taught in 01_goldfish_stateless."""

    stage = "stateless"

    def _messages(self, text: str) -> list[dict]:
        return [{"role": "user", "content": text}]


class HistoryMemory(_Base):
    """The history list: resend every earlier message with the new one. Taught in 02_history_list."""

    stage = "history"

    def __init__(self, *args, keep_last: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.history: list[dict] = []
        self.keep_last = keep_last  # naive workaround from 03: only the last K messages are sent
        self._last_total = 0        # input + output tokens of the previous call (for usage deltas)

    def _visible(self) -> list[dict]:
        """The stored messages the next request will carry (all, or the last K starting at a user turn)."""
        sent = self.history
        if self.keep_last is not None:
            sent = sent[-self.keep_last:] if self.keep_last else []
            while sent and sent[0]["role"] != "user":
                sent = sent[1:]
        return sent

    def _messages(self, text: str) -> list[dict]:
        return [*({"role": m["role"], "content": m["content"]} for m in self._visible()),
                {"role": "user", "content": text}]

    def _after(self, text: str, reply: str, message=None) -> None:
        usage = message.usage if message is not None else None
        user_tokens = reply_tokens = None
        if usage is not None:
            reply_tokens = usage.output_tokens
            # exact in sum: the request grew by this message plus framing since the previous call
            if self.keep_last is None:
                if not self.history:  # first call: one count of the fixed part (system + framing)
                    kwargs = {"system": self.system} if self.system else {}
                    self._last_total = self.client.messages.count_tokens(
                        model=self.model, messages=[{"role": "user", "content": "."}], **kwargs).input_tokens - 1
                user_tokens = usage.input_tokens - self._last_total
                if user_tokens < 1:  # the deltas do not add up: measure the message itself
                    kwargs = {"system": self.system} if self.system else {}
                    user_tokens = self.client.messages.count_tokens(
                        model=self.model, messages=[{"role": "user", "content": text}], **kwargs).input_tokens - \
                        self.client.messages.count_tokens(
                            model=self.model, messages=[{"role": "user", "content": "."}], **kwargs).input_tokens + 1
            self._last_total = usage.input_tokens + usage.output_tokens
        self.history += [{"role": "user", "content": text, "tokens": user_tokens},
                         {"role": "assistant", "content": reply, "tokens": reply_tokens}]

    def state(self) -> dict:
        window = [{"role": m["role"], "text": m["content"], "tokens": m.get("tokens")} for m in self._visible()]
        return {**super().state(), "window": window,
                "window_tokens": sum(m["tokens"] or 0 for m in window)}


# ---------------------------------------------------------------------------- bounded memory (04)

import random  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from pathlib import Path  # noqa: E402

from .conversation import starts_exchange, strip_meta, text_of  # noqa: E402
from .prompts import SCOUT_PERSONA  # noqa: E402
from .pending import PENDING_MAX_COUNT, PENDING_MAX_TOKENS, fold_pending, is_retryable  # noqa: E402
from .summary import merge_summary, system_with_summary  # noqa: E402
from .window import trim, window_tokens  # noqa: E402
from pymongo.errors import ConnectionFailure, PyMongoError  # noqa: E402
from .store import StoreError  # noqa: E402

__all__ += ["BoundedMemory", "session_id_from_file", "SessionConflict"]


class SessionConflict(RuntimeError):
    """The session kept changing under us (other writers) beyond the retry bound."""


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


class BoundedMemory(_Base):
    """A token-budgeted window plus a rolling summary, persisted in MongoDB. Taught in 04_bounded_memory_mongodb.

    One turn: load session → build request (persona + summary in `system`; window + new user turn in
    `messages`) → `messages.create` → exact tokens from `usage` → append exchange → trim by whole
    exchanges → merge dropped into the summary → save (version guard) + log entries.
    """

    stage = "bounded"
    MAX_SAVE_ATTEMPTS = 20

    def __init__(self, client, settings: Settings | None = None, *, store, user_id: str = "default",
                 session_id: str | None = None, session_file: str | Path | None = None, budget: int | None = None,
                 summary_max_tokens: int | None = None, system: str | None = None, model: str | None = None,
                 max_tokens: int | None = None, ledger=None, check_retention: bool = True,
                 pending_max_tokens: int = PENDING_MAX_TOKENS, pending_max_count: int = PENDING_MAX_COUNT):
        super().__init__(client, settings, system=SCOUT_PERSONA if system is None else system, model=model,
                         max_tokens=max_tokens, ledger=ledger)
        if session_id is None:
            session_id = session_id_from_file(session_file) if session_file else uuid.uuid4().hex
        self.store = store
        self.user_id = user_id
        self.session_id = session_id
        self.budget = budget or self.settings.window_budget
        self.summary_max_tokens = summary_max_tokens or self.settings.summary_max_tokens
        self.check_retention = check_retention
        self.pending_max_tokens, self.pending_max_count = pending_max_tokens, pending_max_count
        self.stats = {"turns": 0, "conflicts": 0, "count_calls": 0, "summary_failures": 0, "unsummarised": 0,
                      "token_recounts": 0}
        self.last: dict = {}

    # -- session
    def _fresh(self) -> dict:
        return {"user_id": self.user_id, "session_id": self.session_id, "version": 0, "window": [], "summary": "",
                "summary_tokens": 0, "summary_covers": None, "retention": None, "missing": [], "pending": [],
                "base_tokens": None, "persona": self.system}

    def load(self, create: bool = True) -> dict:
        """The session document; a missing one is created under the same id (or, with create=False, built in memory)."""
        doc = self.store.load_session(self.user_id, self.session_id)
        if doc is None:
            if not create:
                return self._fresh()
            fresh = self._fresh()
            doc = self.store.create_session(self.user_id, self.session_id,
                                            {k: v for k, v in fresh.items() if k not in ("user_id", "session_id", "version")})
        return {**self._fresh(), **doc}

    def system_prompt(self, session: dict) -> str:
        """Persona plus the session's summary, marked as data."""
        return system_with_summary(self.system, session.get("summary"))

    def _request_for(self, session: dict, text: str) -> dict:
        request = {"model": self.model, "max_tokens": self.max_tokens, "system": self.system_prompt(session),
                   "messages": [*(strip_meta(m) for m in session["window"]), {"role": "user", "content": text}]}
        return request

    def build_request(self, text: str) -> dict:
        """The exact request the next turn would send for `text`; reads the store, changes nothing."""
        return self._request_for(self.load(create=False), text)

    # -- tokens
    def _base_tokens(self, session: dict) -> int:
        """Framing + system prompt tokens of this session's requests (one count call when unknown)."""
        if session.get("base_tokens") is not None and session.get("persona") == self.system:
            return session["base_tokens"]
        return self._count_base(self.system_prompt(session))

    def _count_base(self, system: str) -> int:
        self.stats["count_calls"] += 1
        counted = self.client.messages.count_tokens(model=self.model, system=system,
                                                    messages=[{"role": "user", "content": "."}]).input_tokens
        return counted - 1

    # -- one turn
    def turn(self, text: str) -> TurnResult:
        """One bounded-memory turn; see the class docstring. Raises EmptyMessageError / TurnError."""
        check_user_text(text)
        try:
            return self._turn(text)
        except (PyMongoError, StoreError) as err:  # the database failed: a clear message, not a stack trace
            raise TurnError(_explain_store(err), text, err) from err

    def _turn(self, text: str) -> TurnResult:
        started = time.perf_counter()
        try:
            session = self.load()
        except ConnectionFailure:  # the server went away since the last turn; nothing is written yet, so
            if not self.store.reconnect():  # restart the local server / reconnect once and carry on
                raise
            session = self.load()
        request = self._request_for(session, text)
        user_seq = self.store.append_log(self.user_id, self.session_id, "user", text, status="pending")
        llm_started = time.perf_counter()
        try:
            message = self._call(request)
        except anthropic.APIError as err:
            self.store.set_log_status(self.user_id, self.session_id, [user_seq], "unanswered",
                                      error=f"{err.__class__.__name__}: {getattr(err, 'message', err)}"[:500])
            raise TurnError(_explain(err), text, err) from err
        llm_s = time.perf_counter() - llm_started
        reply = reply_text(message)
        usage = message.usage
        asst_seq = self.store.append_log(self.user_id, self.session_id, "assistant", reply,
                                         tokens=usage.output_tokens, status="pending", reply_to=user_seq)
        base = self._base_tokens(session)
        user_tokens = usage.input_tokens - base - window_tokens(session["window"])
        if user_tokens < 1:  # the parts do not add up (e.g. a count that drifted): measure the message itself
            self.stats["token_recounts"] += 1
            user_tokens = self._tokens_of_text(text)
        exchange = [{"role": "user", "content": text, "tokens": user_tokens, "seq": user_seq},
                    {"role": "assistant", "content": reply, "tokens": usage.output_tokens, "seq": asst_seq}]
        saved, info = self._commit(session, exchange, base)
        self.store.set_log_status(self.user_id, self.session_id, [user_seq, asst_seq], "ok", only_if_status="pending")
        self.stats["turns"] += 1
        total_s = time.perf_counter() - started
        self.last = {**info, "llm_s": llm_s, "memory_s": total_s - llm_s - info.get("summary_s", 0.0)}
        extra = {"session_id": self.session_id, "user_seq": user_seq, "assistant_seq": asst_seq,
                 "window_tokens": window_tokens(saved["window"]), "summary": saved.get("summary", ""),
                 "retention": saved.get("retention"), "dropped": info["dropped"], "version": saved["version"],
                 "user_tokens": user_tokens}
        return TurnResult(reply, usage.input_tokens, usage.output_tokens, message.stop_reason, request, self.stage,
                          extra)

    def _place(self, session: dict, exchange: list[dict], base: int | None) -> tuple[dict, dict]:
        """Apply one exchange without any model call: trim; what was dropped joins `pending`."""
        window, dropped = trim([*session["window"], *exchange], self.budget)
        fields = {"window": window, "persona": self.system, "base_tokens": base,
                  "pending": [*session.get("pending", []), *dropped]}
        return fields, {"dropped": len(dropped), "summary_s": 0.0, "summary_error": None}

    def _merge_pending(self, session: dict, max_chunks: int | None = 1) -> tuple[dict, dict, list[int]]:
        """Fold the session's pending turns into its summary (helpers.pending); returns (fields, info, seqs left out)."""
        pending = session.get("pending") or []
        info: dict = {"summary_s": 0.0, "summary_error": None}
        if not pending:
            return {}, info, []
        t0 = time.perf_counter()

        known = list(session.get("facts") or [])  # every fact the summary is responsible for, carried merge to merge

        def merge(summary: str, messages: list[dict]):
            result = merge_summary(self.client, self.settings.summary_model, summary, messages,
                                   max_tokens=self.summary_max_tokens, extraction_model=self.settings.extraction_model,
                                   ledger=self.ledger, check_retention=self.check_retention, known_facts=list(known))
            if result.retention is not None or result.facts:
                known[:] = result.facts
            return result

        out = fold_pending(merge, session.get("summary", ""), session.get("summary_tokens") or 0, pending,
                           max_tokens=self.pending_max_tokens, max_count=self.pending_max_count, max_chunks=max_chunks)
        info["summary_s"] = time.perf_counter() - t0
        if out.error:
            self.stats["summary_failures"] += 1
            info["summary_error"] = out.error
        if out.warning:
            info["summary_warning"] = out.warning
        fields: dict = {}
        if out.merged:
            covers = session.get("summary_covers") or {"first_seq": None, "last_seq": None, "count": 0}
            seqs = [m["seq"] for m in out.merged if m.get("seq") is not None]
            first = min([s for s in [covers.get("first_seq"), *seqs] if s is not None], default=None)
            last = max([s for s in [covers.get("last_seq"), *seqs] if s is not None], default=None)
            base = session.get("base_tokens")
            final = out.results[-1]  # it checked every fact the summary is responsible for, old and new
            fields.update({"summary": out.summary, "summary_tokens": out.summary_tokens, "retention": final.retention,
                           "missing": final.missing, "facts": known,
                           "summary_covers": {"first_seq": first, "last_seq": last,
                                              "count": covers["count"] + len(out.merged)}})
            # The system prompt grew or shrank by the summary's change; the first summary needs one count.
            fields["base_tokens"] = ((base + out.summary_tokens - (session.get("summary_tokens") or 0))
                                     if session.get("summary") and base is not None
                                     else self._count_base(self.system_prompt({"summary": out.summary})))
            info["summary_result"] = {"calls": out.calls, "retention": final.retention, "missing": final.missing,
                                      "merged": len(out.merged)}
        left_out = [m["seq"] for m in out.unsummarised if m.get("seq") is not None]
        if out.merged or out.unsummarised:
            fields["pending"] = out.pending
        if out.unsummarised or out.warning:
            self.stats["unsummarised"] = self.stats.get("unsummarised", 0) + len(out.unsummarised)
            fields["unsummarised"] = (session.get("unsummarised") or 0) + len(out.unsummarised)
            fields["summary_warning"] = out.warning
        elif out.merged and session.get("summary_warning"):
            fields["summary_warning"] = None
        return fields, info, left_out

    def _fold(self, session: dict, exchange: list[dict], base: int | None,
              max_chunks: int | None = 1) -> tuple[dict, dict, list[int]]:
        """Place one exchange and fold what is pending, in one go (import and rebuild: no concurrent save between)."""
        fields, info = BoundedMemory._place(self, session, exchange, base)
        merged, minfo, left_out = self._merge_pending({**session, **fields}, max_chunks)
        return {**fields, **merged}, {**info, **minfo}, left_out

    def _commit(self, session: dict, exchange: list[dict], base: int) -> tuple[dict, dict]:
        """Save the exchange with the version guard; the summary merge runs once, before the retry loop.

        On a conflict the exchange is placed on the reloaded session (no model call) and the merge result
        is re-applied if that session still has the same summary and the merged turns pending; otherwise
        the result is dropped and the turns stay pending for a later merge (never merged twice).
        """
        fields, info = self._place(session, exchange, base)
        read = {**session, **fields}
        merged, minfo, left_out = self._merge_pending(read)
        info.update(minfo)
        handled = {m.get("seq") for m in read["pending"]} - {m.get("seq") for m in merged.get("pending", [])}
        for attempt in range(self.MAX_SAVE_ATTEMPTS):
            if attempt:
                self.stats["conflicts"] += 1
                time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
                session = self.load()
                fields, _ = self._place(session, exchange, self._base_tokens(session))
                if merged:
                    merged = _rebase(merged, read, {**session, **fields}, handled)
                    if merged is None:
                        merged, left_out = {}, []
                        info["summary_error"] = info["summary_error"] or "summary not applied: the session changed"
            saved = self.store.save_session(self.user_id, self.session_id, session["version"], {**fields, **merged})
            if saved is not None:
                info["conflicts"] = attempt
                self._mark_unsummarised(left_out)
                return {**self._fresh(), **saved}, info
        self.stats["conflicts"] += 1
        raise SessionConflict(f"session {self.session_id!r} changed {self.MAX_SAVE_ATTEMPTS} times while saving; "
                              "the exchange is kept in the logs: run --rebuild")

    def _mark_unsummarised(self, seqs: list[int]) -> None:
        """Log entries left out of the summary: kept, flagged for --rebuild."""
        if seqs:
            self.store.set_log_status(self.user_id, self.session_id, seqs, "unsummarised")

    # -- inspection and maintenance
    def state(self) -> dict:
        """What `--show-state` prints: the session as the next turn will see it."""
        return self._state(self.load(create=False))

    def _state(self, session: dict) -> dict:
        window = [{"role": m["role"], "text": text_of(m), "tokens": m.get("tokens"), "seq": m.get("seq")}
                  for m in session["window"]]
        return {"stage": self.stage, "memories": [], "retrieved": [],
                "session_id": self.session_id, "user_id": self.user_id, "summary": session.get("summary", ""),
                "summary_tokens": session.get("summary_tokens", 0), "summary_covers": session.get("summary_covers"),
                "retention": session.get("retention"), "missing": session.get("missing", []),
                "pending": len(session.get("pending", [])), "window": window,
                "unsummarised": session.get("unsummarised") or 0, "summary_warning": session.get("summary_warning"),
                "window_tokens": window_tokens(session["window"]), "budget": self.budget,
                "gauge": self._gauge(session),
                "version": session.get("version", 0),
                "log_count": self.store.count_logs(self.user_id, self.session_id)}

    def _gauge(self, session: dict, memory_tokens: int = 0) -> dict:
        """Where the request's input tokens go: system (persona + framing), summary, memories, window."""
        summary_tokens = session.get("summary_tokens") or 0
        base = session.get("base_tokens")
        if base is None:  # no turn has counted it yet (a new session): count it now, so the gauge is never "?"
            try:
                base = self._count_base(BoundedMemory.system_prompt(self, session))
            except anthropic.APIError:  # the model cannot be reached: the gauge says "?" until a turn counts it
                base = None
        # base_tokens covers framing + persona + summary; retrieved memories change per turn and are not in it
        return {"system": (base - summary_tokens) if base is not None else None,
                "summary": summary_tokens, "memories": memory_tokens, "window": window_tokens(session["window"]),
                "budget": self.budget, "reserved_output": self.max_tokens}

    def _tokens_of_text(self, text: str) -> int:
        self.stats["count_calls"] += 1
        counted = self.client.messages.count_tokens(model=self.model, messages=[{"role": "user", "content": text}])
        return max(1, counted.input_tokens - self._empty_request_tokens())

    def _empty_request_tokens(self) -> int:
        if not hasattr(self, "_empty_tokens"):
            one = self.client.messages.count_tokens(model=self.model, messages=[{"role": "user", "content": "."}])
            self._empty_tokens = one.input_tokens - 1
        return self._empty_tokens

    def import_turns(self, turns: list) -> dict:
        """Append an existing transcript as if those turns had happened, without calling the chat model.

        Logs are written (with each turn's `ts`, `speaker` and conversation), the window is trimmed and the
        summary maintained, one exchange at a time.
        """
        from .conversation import validate_messages
        from .importer import as_turns, log_extra

        items = as_turns(turns)
        turns = [t.message() for t in items]
        validate_messages(turns)
        imported = 0
        exchange: list[dict] = []
        for i, turn in enumerate(turns):
            role, content = turn["role"], turn["content"]
            tokens = self._tokens_of_text(text_of(turn))
            seq = self.store.append_log(self.user_id, self.session_id, role, content, status="pending",
                                        tokens=tokens, extra=log_extra(items[i]))
            exchange.append({"role": role, "content": content, "tokens": tokens, "seq": seq})
            next_is_new = i + 1 == len(turns) or starts_exchange(turns[i + 1])
            if next_is_new:
                session = self.load()
                self._commit(session, exchange, self._base_tokens(session))
                self.store.set_log_status(self.user_id, self.session_id, [m["seq"] for m in exchange], "ok",
                                          only_if_status="pending")
                imported += len(exchange)
                exchange = []
        return {"imported": imported, **self.state()}

    def rebuild(self) -> dict:
        """Recompute window and summary from the logs (the source of truth), e.g. after a crash or import.

        Safe beside live turns: the transcript read at the start is folded (in summary chunks within the
        pending bound); if another writer commits meanwhile, only the exchanges it committed are folded on
        top and the save is retried, so nothing committed is lost or counted twice.
        """
        session = self.load()
        included: set[int] = set()
        work = {**self._fresh(), "version": session["version"]}
        left_out: list[int] = []
        for attempt in range(self.MAX_SAVE_ATTEMPTS):
            messages = self._committed_messages(session, included)
            if attempt == 0:
                while messages and messages[0]["role"] != "user":  # a leading greeting starts no exchange
                    included.add(messages.pop(0)["seq"])
            fields, _info, more = self._fold(work, messages, work.get("base_tokens"), max_chunks=None)
            left_out += more
            included |= {m["seq"] for m in messages}
            work = {**work, **fields, "version": session["version"]}
            saved = self.store.save_session(self.user_id, self.session_id, session["version"],
                                            {k: v for k, v in work.items() if k not in ("user_id", "session_id",
                                                                                         "version")})
            if saved is not None:
                in_session = {m.get("seq") for m in [*saved.get("window", []), *saved.get("pending", [])]}
                folded = sorted(included - set(left_out))
                # entries recovered into the window, pending or summary are acknowledged again
                self.store.set_log_status(self.user_id, self.session_id, folded, "ok", only_if_status="unsummarised")
                self.store.set_log_status(self.user_id, self.session_id, [s for s in folded if s in in_session], "ok",
                                          only_if_status="pending")
                self._mark_unsummarised(left_out)
                return self.state()
            self.stats["conflicts"] += 1
            time.sleep(random.uniform(0, 0.005 * (attempt + 1)))
            session = self.load()
        raise SessionConflict("the session kept changing during --rebuild; try again")

    def _committed_messages(self, session: dict, skip: set[int]) -> list[dict]:
        """Committed log messages not in `skip`, grouped into exchanges (replies follow their user turn).

        Committed = marked "ok" or "unsummarised", or still "pending" but already in the saved session (a
        crash between the session save, which is the commit point, and the status update).
        """
        saved = {m.get("seq"): m.get("tokens") for m in [*session.get("window", []), *session.get("pending", [])]}
        entries = [e for e in self.store.logs_for(self.user_id, self.session_id) if e["seq"] not in skip and (
            e.get("status") in ("ok", "unsummarised") or (e.get("status") == "pending" and e["seq"] in saved))]
        exchanges: dict[int, list[dict]] = {}
        last: list[dict] | None = None
        for e in entries:
            tokens = saved.get(e["seq"]) or e.get("tokens") or self._tokens_of_text(text_of(e))
            message = {"role": e["role"], "content": e["content"], "tokens": tokens, "seq": e["seq"]}
            target = exchanges.get(e.get("reply_to")) if e["role"] == "assistant" else None
            if target is None and (e["role"] == "user" and starts_exchange(message) or last is None):
                last = exchanges.setdefault(e["seq"], [])
                target = last
            (target if target is not None else last).append(message)
        return [m for key in sorted(exchanges) for m in exchanges[key]]


def _rebase(fields: dict, read: dict, current: dict, handled: set) -> dict | None:
    """Re-apply a summary step computed on session `read` to the newer `current`, or None if it no longer applies."""
    if "summary" in fields and (current.get("summary") != read.get("summary")
                                or current.get("summary_covers") != read.get("summary_covers")):
        return None  # another writer merged meanwhile: our summary is stale
    now_pending = current.get("pending") or []
    if not handled <= {m.get("seq") for m in now_pending}:
        return None
    new = {**fields, "pending": [m for m in now_pending if m.get("seq") not in handled]}
    if "base_tokens" in fields and read.get("base_tokens") is not None and current.get("base_tokens") is not None:
        new["base_tokens"] = current["base_tokens"] + fields["base_tokens"] - read["base_tokens"]
    if "unsummarised" in fields:
        new["unsummarised"] = (current.get("unsummarised") or 0) + fields["unsummarised"] - (read.get("unsummarised") or 0)
    return new


def _explain(err: anthropic.APIError) -> str:
    """A clear, one-line message for a failed model call (no stack trace, no secrets)."""
    message = getattr(err, "message", str(err))
    if isinstance(err, anthropic.BadRequestError) and "prompt is too long" in str(message):
        return ("your message is too long for the model's context window (" + str(message).split("prompt is too long:")[-1]
                .strip(" '}") + "); shorten it or split it into parts. Nothing was lost.")
    if isinstance(err, anthropic.APITimeoutError):
        return "the model did not answer in time (after retries); your message is saved — try again."
    if isinstance(err, anthropic.APIConnectionError):
        return "could not reach the model (after retries); your message is saved — check the network and try again."
    if isinstance(err, anthropic.RateLimitError):
        return "rate limited by the API (after retries); your message is saved — wait a moment and try again."
    if isinstance(err, anthropic.APIStatusError):
        return f"the model call failed with HTTP {err.status_code} (after retries); your message is saved — try again."
    return f"the model call failed: {err.__class__.__name__}; your message is saved — try again."


def _explain_store(err: BaseException) -> str:
    """A clear, one-line message for a failed database operation during a turn."""
    from .store import _short_reason

    return (f"the database failed during this turn ({_short_reason(err)}); the turn may not have been saved. "
            "Check the store (`python -m helpers.store status` for the local server, or MONGODB_URI) and try again.")


# ---------------------------------------------------------------------------- vector memory (05)

__all__ += ["VectorMemory"]


REQUEST_FRAMING = 12  # tokens the Messages API adds around a request (roles, separators), kept off the budget
MESSAGE_FRAMING = 4   # tokens it adds per message (role marker and separator), counted with each window message


class VectorMemory(BoundedMemory):
    """Bounded memory plus long-term vector memory: per-user facts and past turns, retrieved per query.

    Per turn: retrieve facts and earlier turns for the user's message (hybrid ranking, this user only) →
    pack them by value per token → inject them in the system prompt, dated, beside the rolling summary →
    the bounded turn → store both turns (speaker, date) and extract facts (inline, or on a background
    worker). With `context_budget`, one budget covers the whole request (persona, summary, memories, window,
    new message), allocated by evidence (helpers.budget); else the window has `budget`, memories `memory_budget`.
    Taught in 05_vector_memory.
    """

    stage = "vector"
    FACTS_PENDING_MAX = 20  # exchanges kept for a later long-term memory write; older ones are given up on

    def __init__(self, client, settings: Settings | None = None, *, store, index=None, facts=None,
                 memory_budget: int | None = None, k: int = 8, mode: str = "hybrid", background: bool = False,
                 embedder=None, half_life_days: float | None = None, context_budget: int | None = None,
                 policy=None, packing=None, units: str = "turns", candidates: int = 100, **kwargs):
        from .budget import BudgetPolicy
        from .longterm import Packing

        if units not in ("turns", "exchanges"):
            raise ValueError(f"units must be 'turns' or 'exchanges', got {units!r}")
        if context_budget is not None and (not isinstance(context_budget, int) or context_budget < 1):
            raise ValueError(f"context_budget must be a positive int (CONTEXT_BUDGET_TOKENS), got {context_budget!r}")
        if context_budget is not None and not kwargs.get("budget"):
            kwargs["budget"] = context_budget  # the stored window may hold the whole budget; each request chooses
        super().__init__(client, settings, store=store, **kwargs)
        from .facts import FactMemory, FactWorker
        from .vector import MemoryIndex

        self.index = index or (facts.index if facts is not None else
                               MemoryIndex(store, embedder, half_life_days=half_life_days))
        self.facts = facts or FactMemory(store, self.index.embedder, client, self.settings, self.ledger,
                                         index=self.index)
        self.memory_budget = memory_budget or self.settings.memory_budget
        self.context_budget = context_budget
        self.policy, self.packing = policy or BudgetPolicy(), packing or Packing()
        self.k, self.mode, self.units, self.candidates = k, mode, units, candidates
        self.lexical_weight: float | None = None  # None: the index's LEXICAL_WEIGHT
        self.worker = FactWorker(handler=self._remember_job) if background else None
        self._retry: list[tuple] = []
        self._last_hits: list = []
        self._last_block, self._delta, self._split = "", 0, None
        self.stats.update({"memory_failures": 0, "memory_skipped": 0, "memory_s": 0.0})

    # -- retrieval and the request
    def _count(self, text: str) -> int:
        """Tokens of `text` as the model in use counts them: live, `count_tokens` (cached per text); offline,
        the offline model's own tokenizer directly (the numbers its count_tokens gives, without a round trip)."""
        from .llm import is_offline

        if is_offline(self.client):
            from .tokens import local_tokens

            return local_tokens(text)
        return self._count_text(text)

    def _block(self, hits: list, session: dict) -> str:
        from .longterm import format_block

        return format_block(hits, session_id=self.session_id, since_seq=session.get("conversation_start"))

    def _pack(self, session: dict):
        from .longterm import pack_by_value

        return lambda hits, tokens: pack_by_value(hits, tokens, self._count, packing=self.packing,
                                                  session_id=self.session_id,
                                                  since_seq=session.get("conversation_start"))

    def _search(self, text: str, limit: int) -> list:
        return self.index.search(self.user_id, text, k=limit, mode=self.mode, lexical_weight=self.lexical_weight)

    def retrieve(self, text: str, session: dict | None = None) -> tuple[str, list]:
        """The memory block for `text` within `memory_budget` and the hits in it (none already in the window)."""
        session = session or {}
        in_window = {(self.session_id, m.get("seq")) for m in session.get("window", [])}
        hits = [h for h in self._search(text, self.k + len(in_window))
                if ((h.source or {}).get("session_id"), (h.source or {}).get("seq")) not in in_window]
        packed = self._pack(session)(hits[: self.k], self.memory_budget)
        return self._block(packed, session), packed

    def system_prompt(self, session: dict, block: str | None = None) -> str:
        base = super().system_prompt(session)
        return f"{base}\n\n{block}" if block else base

    def _request_for(self, session: dict, text: str) -> dict:
        if self.context_budget is None:
            block, hits = self.retrieve(text, session)
            self._last_hits, self._last_block, self._split = hits, block, None
            self._delta = self._count("\n\n" + block) if block else 0
            request = super()._request_for(session, text)
            request["system"] = self.system_prompt(session, block)
            return request
        return self._planned_request(session, text)

    def _planned_request(self, session: dict, text: str) -> dict:
        """One context budget: window suffix, summary and memories chosen by helpers.budget.plan."""
        from .budget import plan
        from .longterm import with_neighbours

        since = session.get("conversation_start")

        def expand(packed, tokens, exclude):
            return with_neighbours(self.index, self.user_id, packed, tokens, self._count, packing=self.packing,
                                   exclude=exclude, session_id=self.session_id, since_seq=since)

        hits = self._search(text, self.candidates)
        summary = session.get("summary") or ""
        with_summary, persona_only = self.system_prompt({"summary": summary}), self.system_prompt({})
        summary_tokens = self._count(with_summary) - self._count(persona_only) if summary else 0
        # the budget is the whole request: persona and the new message come off it first
        room = max(0, self.context_budget - self._count(persona_only) - self._count(text) - REQUEST_FRAMING)
        sent, summary_sent, packed, split = plan(
            session["window"], summary_tokens, hits, room, session_id=self.session_id,
            block_tokens=lambda h: self._count("\n\n" + self._block(h, session)), pack=self._pack(session),
            expand=expand, policy=self.policy, framing=MESSAGE_FRAMING)
        block = self._block(packed, session)
        self._last_hits, self._last_block, self._split = packed, block, split
        unsent = window_tokens(session["window"]) - window_tokens(sent)
        self._delta = split.memories - unsent - (0 if summary_sent else summary_tokens)
        system = self.system_prompt(session if summary_sent else {**session, "summary": ""}, block)
        return {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                "messages": [*(strip_meta(m) for m in sent), {"role": "user", "content": text}]}

    def _count_text(self, text: str) -> int:
        """Tokens of `text` as the model counts them (`count_tokens`, live or offline), cached per text."""
        cache = self.__dict__.setdefault("_count_cache", {})
        if text not in cache:
            if len(cache) > 4096:
                cache.clear()
            cache[text] = self._tokens_of_text(text)
        return cache[text]

    def _memory_tokens(self) -> int:
        """How many more (or fewer) tokens this turn's request has than persona + summary + stored window."""
        return self._delta

    def _base_tokens(self, session: dict) -> int:
        # persona + summary (counted once, then tracked by deltas) plus this turn's memory block and choices
        return super()._base_tokens(session) + self._memory_tokens()

    def _place(self, session: dict, exchange: list[dict], base: int | None) -> tuple[dict, dict]:
        # stored base tokens never include this turn's memory block
        return super()._place(session, exchange, None if base is None else base - self._memory_tokens())

    def _commit(self, session: dict, exchange: list[dict], base: int) -> tuple[dict, dict]:
        saved, info = super()._commit(session, exchange, base)
        # long-term memory is written once, after the exchange is committed (an import writes it in batches)
        if self.worker is None and not getattr(self, "_importing", False):
            self._remember_committed(saved, exchange)
        return saved, info

    # -- writing long-term memory
    def _index_turns(self, exchange: list[dict], when=None) -> None:
        from .longterm import TurnUnit, index_turns

        if self.units == "turns":
            units = [TurnUnit(m["seq"], m["role"], text_of(m), m.get("ts") or when, m.get("speaker"))
                     for m in exchange if m.get("seq") is not None]
            index_turns(self.index, self.user_id, self.session_id, units)

    def _remember_job(self, user_id: str, messages: list[dict], source: dict) -> None:
        try:
            self.facts.remember(user_id, messages, source, episode=self.units == "exchanges")
        except Exception:
            self._retry.append((user_id, messages, source))  # retried on the next turn: nothing is lost
            raise

    def _remember_committed(self, session: dict, exchange: list[dict]) -> None:
        """Store this exchange (and earlier failures) in long-term memory; update `facts_pending` atomically."""
        earlier = list(session.get("facts_pending") or [])
        left, given_up = self._remember_now(earlier, exchange)
        done = [item["seq"] for item in earlier if item not in left]
        new = [item for item in left if item not in earlier]
        key = {"user_id": self.user_id, "session_id": self.session_id}
        # $pull/$push, not a versioned save: concurrent turns each add or remove only their own items
        if done:
            self.store.sessions.update_one(key, {"$pull": {"facts_pending": {"seq": {"$in": done}}}})
        if new:
            self.store.sessions.update_one(key, {"$push": {"facts_pending": {"$each": new}}})
        if given_up:
            self.store.sessions.update_one(key, {"$inc": {"facts_skipped": given_up}})

    def _remember_now(self, pending: list[dict], exchange: list[dict]) -> tuple[list[dict], int]:
        """Store turns, episodes and facts for earlier failures and this exchange; returns (what to retry, how many
        given up).

        Any error (model, embedder, database) keeps the item for a later turn, up to FACTS_PENDING_MAX items;
        a non-retryable model error (400/401/403/404) is given up on and counted, never retried forever.
        """
        t0 = time.perf_counter()
        todo = [*pending, {"messages": [strip_meta(m) for m in exchange], "seq": exchange[0].get("seq")}]
        left, given_up = [], 0
        try:
            self._index_turns(exchange)  # no model call; an embedder or database error is retried with the facts
        except Exception:  # noqa: BLE001 - nothing here may lose the committed turn
            self.stats["memory_failures"] += 1
            todo[-1]["turns"] = [strip_meta(m) | {"seq": m.get("seq")} for m in exchange]
        for item in todo:
            try:
                if item.get("turns"):
                    self._index_turns(item["turns"])
                    item.pop("turns")
                self.facts.remember(self.user_id, item["messages"], {"session_id": self.session_id, "seq": item["seq"]},
                                    episode=self.units == "exchanges")
            except Exception as err:  # noqa: BLE001 - nothing here may lose the committed turn
                self.stats["memory_failures"] += 1
                if isinstance(err, anthropic.APIError) and not is_retryable(err):
                    given_up += 1
                else:
                    left.append(item)
        if len(left) > self.FACTS_PENDING_MAX:  # the oldest are given up on (their episodes are usually stored)
            given_up += len(left) - self.FACTS_PENDING_MAX
            left = left[-self.FACTS_PENDING_MAX:]
        self.stats["memory_skipped"] += given_up
        self.stats["memory_s"] += time.perf_counter() - t0
        return left, given_up

    def turn(self, text: str) -> TurnResult:
        if self.worker is not None:
            while self._retry:
                self.worker.submit(*self._retry.pop(0))
        result = super().turn(text)
        if self.worker is not None:
            exchange = [{"role": "user", "content": text, "seq": result.extra["user_seq"]},
                        {"role": "assistant", "content": result.reply, "seq": result.extra["assistant_seq"]}]
            self._index_turns(exchange)
            self.worker.submit(self.user_id, [strip_meta(m) for m in exchange],
                               {"session_id": self.session_id, "seq": result.extra["user_seq"]})
        result.extra["retrieved"] = [h.to_dict() for h in self._last_hits]
        if self._split is not None:
            result.extra["split"] = self._split.to_dict()
        return result

    def close(self) -> None:
        """Finish background work (every queued exchange is stored before this returns)."""
        if self.worker is not None:
            self.worker.close()

    # -- inspection
    def _state(self, session: dict) -> dict:
        data = super()._state(session)
        data["memories"] = [h.to_dict() for h in self.facts.active(self.user_id)]
        data["retrieved"] = [h.to_dict() for h in self._last_hits]
        data["memory_budget"] = self.memory_budget
        data["context_budget"] = self.context_budget
        data["facts_pending"] = len(session.get("facts_pending", []))
        data["facts_skipped"] = session.get("facts_skipped") or 0
        gauge = self._gauge(session, self._count("\n\n" + self._last_block) if self._last_hits else 0)
        if self._split is not None:  # what the last request sent, within the one context budget
            gauge.update({"window": self._split.window, "summary": self._split.summary,
                          "memories": self._split.memories, "budget": self._split.budget,
                          "memory_cap": self._split.memory_cap, "evidence": self._split.evidence})
        elif self.context_budget is not None:
            gauge.update({"budget": self.context_budget, "memory_cap": 0, "evidence": "no question yet"})
        data["gauge"] = gauge
        data["split"] = self._split.to_dict() if self._split is not None else None
        return data

    def import_turns(self, turns: list) -> dict:
        """Import a (dated) transcript in one batch: logs, one fold of window + summary, turns and facts indexed.

        `turns` are {role, content} dicts (optionally `ts`, `speaker`, `conversation`) or
        helpers.transcript.Turn; their times become the memories' dates. No chat-model call; one summary
        call; fact extraction over several exchanges per call (helpers.importer).
        """
        from .importer import import_dated

        self._last_block, self._last_hits, self._delta, self._split = "", [], 0, None
        result = import_dated(self, turns)
        result["memories"] = [h.to_dict() for h in self.facts.active(self.user_id)]
        return result


def _vector_strategy(client, settings, *, store=None, **kw) -> VectorMemory:
    """Simulator factory for vector memory; an in-memory store unless `store` is given."""
    from .store import mongomock_store

    kw.setdefault("user_id", "simulation")
    return VectorMemory(client, settings, store=store or mongomock_store("simulation"), **kw)


def _bounded_strategy(client, settings, *, store=None, budget: int | None = None, summary_max_tokens: int | None = None,
                      system: str | None = None, model: str | None = None, max_tokens: int | None = None, ledger=None,
                      user_id: str = "simulation", session_id: str | None = None) -> BoundedMemory:
    """Simulator factory for bounded memory; an in-memory store unless `store` is given."""
    from .store import mongomock_store

    return BoundedMemory(client, settings, store=store or mongomock_store("simulation"), user_id=user_id,
                         session_id=session_id, budget=budget, summary_max_tokens=summary_max_tokens, system=system,
                         model=model, max_tokens=max_tokens, ledger=ledger)


def _register() -> None:
    from .cost import STRATEGIES, register_strategy

    if "stateless" not in STRATEGIES:
        register_strategy("stateless", lambda client, settings, **kw: StatelessMemory(client, settings, **kw))
    if "bounded" not in STRATEGIES:
        register_strategy("bounded", _bounded_strategy)
    if "vector" not in STRATEGIES:
        register_strategy("vector", _vector_strategy)


_register()
