"""The turn interface, the goldfish and the history list. Taught in 01_goldfish_stateless and 02_history_list, "The same thing, packaged"."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import anthropic

from helpers.config import Settings, load_settings
from helpers.conversation import reply_text
from helpers.memory.errors import EmptyMessageError, TurnError, explain
from helpers.prompts import PLAIN_PERSONA

__all__ = [
    "MAX_USER_CHARS",
    "TurnResult",
    "check_user_text",
    "reply_text",
    "request_input_tokens",
    "MemoryBase",
    "StatelessMemory",
    "HistoryMemory",
]


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
            raise EmptyMessageError(
                "the message is not valid Unicode text (undecodable bytes); re-send it as UTF-8"
            ) from None
    if len(text) > MAX_USER_CHARS:
        raise EmptyMessageError(
            f"message too long ({len(text):,} characters > {MAX_USER_CHARS:,}); send it in smaller parts"
        )
    return text


def request_input_tokens(usage: Any) -> int:
    """Every input token of a call: `input_tokens` plus what was written to and read from the prompt cache.

    With caching on (notebook 03), `usage.input_tokens` is only the uncached part of the request."""
    return (
        usage.input_tokens
        + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
        + (getattr(usage, "cache_read_input_tokens", 0) or 0)
    )


@dataclass
class TurnResult:
    """What one turn produced: the reply, exact token usage, and the request that was sent.

    The stored stages (bounded, vector) also say where the turn went: its log entries, the window and summary
    it left behind, and (with long-term memory) what was retrieved and how the context budget was split.
    """

    reply: str
    input_tokens: int  # the whole request's input tokens, cached parts included
    output_tokens: int
    stop_reason: str | None
    request: dict
    stage: str
    session_id: str | None = None  # bounded and later: the session this turn was saved in
    user_seq: int | None = None  # log sequence numbers of the user turn and the reply
    assistant_seq: int | None = None
    user_tokens: int | None = None  # the new user message's share of input_tokens (measured)
    window_tokens: int | None = None  # the stored window after this turn
    summary: str | None = None  # the rolling summary after this turn
    retention: float | None = None  # share of known facts the summary kept (None: not checked)
    dropped: int = 0  # messages trimmed out of the window this turn
    version: int | None = None  # the session document's version after the save
    retrieved: list[dict] = field(default_factory=list)  # long-term memories sent with this turn's request
    split: dict | None = None  # one context budget: how it was split (helpers.memory.budget)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


class MemoryBase:
    stage = "base"

    def __init__(
        self,
        client: anthropic.Anthropic,
        settings: Settings | None = None,
        *,
        system: str | None = None,
        model: str | None = None,
        max_tokens: int | None = None,
        ledger=None,
    ):
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
        return {
            "stage": self.stage,
            "summary": "",
            "retention": None,
            "window": [],
            "window_tokens": 0,
            "budget": None,
            "memories": [],
            "retrieved": [],
        }

    def turn(self, text: str) -> TurnResult:
        """Send one user message and return the reply; raises EmptyMessageError / TurnError."""
        check_user_text(text)
        request = self.build_request(text)
        try:
            message = self._call(request)
        except anthropic.APIError as err:
            raise TurnError(explain(err), text, err) from err
        reply = reply_text(message)
        self._after(text, reply, message)
        return TurnResult(
            reply,
            request_input_tokens(message.usage),
            message.usage.output_tokens,
            message.stop_reason,
            request,
            self.stage,
        )


class StatelessMemory(MemoryBase):
    """The goldfish: every call sends only the new message. Taught in 01_goldfish_stateless."""

    stage = "stateless"

    def _messages(self, text: str) -> list[dict]:
        return [{"role": "user", "content": text}]


class HistoryMemory(MemoryBase):
    """The history list: resend every earlier message with the new one. Taught in 02_history_list."""

    stage = "history"

    def __init__(self, *args, keep_last: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.history: list[dict] = []
        self.keep_last = keep_last  # naive workaround from 03: only the last K messages are sent
        self._last_total = 0  # input + output tokens of the previous call (for usage deltas)

    def _visible(self) -> list[dict]:
        """The stored messages the next request will carry (all, or the last K starting at a user turn)."""
        sent = self.history
        if self.keep_last is not None:
            sent = sent[-self.keep_last :] if self.keep_last else []
            while sent and sent[0]["role"] != "user":
                sent = sent[1:]
        return sent

    def _messages(self, text: str) -> list[dict]:
        return [
            *({"role": m["role"], "content": m["content"]} for m in self._visible()),
            {"role": "user", "content": text},
        ]

    def _after(self, text: str, reply: str, message=None) -> None:
        usage = message.usage if message is not None else None
        user_tokens = reply_tokens = None
        if usage is not None:
            reply_tokens = usage.output_tokens
            # exact in sum: the request grew by this message plus framing since the previous call
            if self.keep_last is None:
                if not self.history:  # first call: one count of the fixed part (system + framing)
                    kwargs = {"system": self.system} if self.system else {}
                    self._last_total = (
                        self.client.messages.count_tokens(
                            model=self.model, messages=[{"role": "user", "content": "."}], **kwargs
                        ).input_tokens
                        - 1
                    )
                user_tokens = request_input_tokens(usage) - self._last_total
                if user_tokens < 1:  # the deltas do not add up: measure the message itself
                    kwargs = {"system": self.system} if self.system else {}
                    user_tokens = (
                        self.client.messages.count_tokens(
                            model=self.model, messages=[{"role": "user", "content": text}], **kwargs
                        ).input_tokens
                        - self.client.messages.count_tokens(
                            model=self.model, messages=[{"role": "user", "content": "."}], **kwargs
                        ).input_tokens
                        + 1
                    )
            self._last_total = request_input_tokens(usage) + usage.output_tokens
        self.history.append({"role": "user", "content": text, "tokens": user_tokens})
        if reply:  # a reply cut to nothing (model_context_window_exceeded at a full window) is not resent: the API
            # refuses an empty assistant turn anywhere but last, and two user turns in a row are one to it
            self.history.append({"role": "assistant", "content": reply, "tokens": reply_tokens})

    def state(self) -> dict:
        window = [{"role": m["role"], "text": m["content"], "tokens": m.get("tokens")} for m in self._visible()]
        return {**super().state(), "window": window, "window_tokens": sum(m["tokens"] or 0 for m in window)}
