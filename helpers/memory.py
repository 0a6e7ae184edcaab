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

    def _after(self, text: str, reply: str) -> None:
        pass

    def turn(self, text: str) -> TurnResult:
        """Send one user message and return the reply; raises EmptyMessageError / TurnError."""
        check_user_text(text)
        request = self.build_request(text)
        try:
            message = self._call(request)
        except anthropic.APIError as err:
            raise TurnError(f"the model call failed: {err.__class__.__name__}: {getattr(err, 'message', err)}", text, err) from err
        reply = reply_text(message)
        self._after(text, reply)
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

    def _messages(self, text: str) -> list[dict]:
        sent = self.history
        if self.keep_last is not None:
            sent = sent[-self.keep_last:] if self.keep_last else []
            while sent and sent[0]["role"] != "user":
                sent = sent[1:]
        return [*sent, {"role": "user", "content": text}]

    def _after(self, text: str, reply: str) -> None:
        self.history += [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
