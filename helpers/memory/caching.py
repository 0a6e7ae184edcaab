"""Prompt-cache breakpoints on a request, and the history list with caching on. Taught in 03_context_window_overflow, section 'Caching cuts the price, not the window'.

Prompt caching (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): a `cache_control`
breakpoint on a content block asks the API to keep the request's prefix up to that block. A later request
that starts with exactly the same prefix reads it from the cache at 0.1x the input price instead of paying
for it again; writing it costs 1.25x once (5-minute entries, refreshed by each hit; 1-hour entries cost 2x). `usage` then splits
the input into `input_tokens` (uncached), `cache_creation_input_tokens` and `cache_read_input_tokens`.
Prefixes shorter than the model's minimum cacheable length are simply not cached.
"""

from __future__ import annotations

from typing import Any

from helpers.memory.history import HistoryMemory

__all__ = [
    "EPHEMERAL",
    "ONE_HOUR",
    "cache_control_for",
    "with_cache_breakpoints",
    "reuses_prefix",
    "CachedHistoryMemory",
]

EPHEMERAL = {"type": "ephemeral"}  # the 5-minute cache (the default TTL)
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}  # an hour; its writes cost 2x the input price instead of 1.25x


def cache_control_for(ttl: str | None) -> dict:
    """The breakpoint marker for a TTL: "5m" (or None) is the plain 5-minute marker, "1h" asks for an hour."""
    if ttl in (None, "5m"):
        return dict(EPHEMERAL)
    if ttl == "1h":
        return dict(ONE_HOUR)
    raise ValueError(f"cache ttl must be '5m' or '1h', got {ttl!r}")


def _block(content: Any) -> list[dict]:
    """Message or system content as a list of blocks (a string becomes one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(b) for b in content]


def with_cache_breakpoints(
    request: dict, *, system: bool = True, messages: tuple[int, ...] = (-1,), cache_control: dict | None = None
) -> dict:
    """A copy of `request` with a breakpoint at the end of the system prompt and on the newest message.

    The system breakpoint keeps the fixed prefix (persona, tools) cached on its own; the one on the newest
    message caches everything before it, which the next turn (the same prefix plus one more exchange) reads
    back. `messages` names other positions to mark (-2: the message before the newest; positions the request
    does not have are skipped). Same text, same token count: only `cache_control` is added."""
    control = dict(cache_control or EPHEMERAL)
    out = {**request}
    if system and request.get("system"):
        blocks = _block(request["system"])
        blocks[-1]["cache_control"] = control
        out["system"] = blocks
    sent = [dict(m) for m in request.get("messages") or []]
    for i in messages:
        if -len(sent) <= i < len(sent):
            blocks = _block(sent[i]["content"])
            blocks[-1]["cache_control"] = control
            sent[i]["content"] = blocks
    if sent:
        out["messages"] = sent
    return out


def _texts(content: Any) -> list[str]:
    return [b.get("text", "") if isinstance(b, dict) else str(b) for b in _block(content)] if content else []


def reuses_prefix(previous: dict, request: dict) -> bool:
    """True when `request` starts with everything `previous` sent (tools, system, every message), text for text.

    Then a breakpoint on `previous`'s newest message wrote a cache entry that `request` can read; any change
    before it (a new summary, a window that slid by one exchange) makes the whole prefix new."""
    if previous.get("tools") != request.get("tools") or _texts(previous.get("system")) != _texts(request.get("system")):
        return False
    before, now = previous.get("messages") or [], request.get("messages") or []
    return len(now) > len(before) and all(
        a["role"] == b["role"] and _texts(a["content"]) == _texts(b["content"]) for a, b in zip(before, now)
    )


class CachedHistoryMemory(HistoryMemory):
    """Naive history with prompt caching: the same requests as HistoryMemory, with breakpoints. Taught in 03.

    Every turn still sends the whole conversation (the context window fills just as fast); the part already
    sent last turn is read from the cache instead of paid for again, while it lives: `cache_ttl` "5m" (default)
    or "1h" (written at 2x instead of 1.25x, for a chat slower than one turn in five minutes)."""

    def __init__(self, *args, cache_ttl: str = "5m", **kwargs):
        super().__init__(*args, **kwargs)
        self.cache_control = cache_control_for(cache_ttl)

    def build_request(self, text: str) -> dict:
        return with_cache_breakpoints(super().build_request(text), cache_control=self.cache_control)
