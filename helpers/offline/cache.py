"""Plumbing: prompt caching in the offline model, with the Messages API's documented semantics.

Followed: Anthropic, "Prompt caching", https://platform.claude.com/docs/en/build-with-claude/prompt-caching
(prices: https://platform.claude.com/docs/en/about-claude/pricing, see helpers.pricing). Each rule below has a
test in tests/offline/test_prompt_cache.py, through the real SDK.

- Breakpoints: `cache_control: {"type": "ephemeral"}` (optional `"ttl": "5m" | "1h"`) on a tool definition, a
  system content block or a message content block, or once at the top level of the request (automatic caching:
  the marker goes on the last block of the last message). At most 4 per request, else the API's 400
  invalid_request_error "A maximum of 4 blocks with cache_control may be provided. Found N.". Longer TTLs must
  come first: a 1-hour breakpoint after a 5-minute one is a 400, and so is a top-level 1-hour marker landing on a
  last block that carries its own 5-minute one.
- The prefix runs tools → system → messages. A breakpoint writes exactly one entry: a hash of the prefix ending
  at its block. A read needs that exact prefix: any byte changed before a position changes its hash. The
  `cache_control` markers are not content, and string content equals one text block. As the docs' table of what
  invalidates what says: a change of `tool_choice`, of `thinking`, of `output_config` (effort, format) or of the
  images in the request (adding or removing one anywhere) invalidates the message positions only; a change of the
  documents' citations setting or of `speed` invalidates system and messages; a change of the tools, everything.
- Lookback: for each breakpoint, from the last one back, at most 20 positions are checked for an entry an
  earlier request wrote, counting the breakpoint itself as the first; a run of consecutive `tool_use` (or
  `tool_result`) blocks is one position. The first live entry found is the prefix read.
- Minimum cacheable length per model (the catalog's `min_cache`, helpers.offline.catalog; MIN_CACHEABLE_TOKENS
  below): a breakpoint whose prefix is shorter writes nothing and raises no error; the request is simply not cached.
- Lifetime: 5 minutes (default) or 1 hour, from the start of the request that writes or reads the entry; a read
  refreshes the entries on the prefix it read. Time comes from `clock` (default `time.monotonic`), which a
  simulation replaces (e.g. with `SimClock`).
- Usage, as the API bills it: A = the prefix read, B = the last 1-hour breakpoint after A, C = the last cacheable
  breakpoint. cache_read_input_tokens = A; cache_creation_input_tokens = C - A, split in `cache_creation` into
  ephemeral_1h_input_tokens = B - A and ephemeral_5m_input_tokens = C - B; input_tokens = the rest after C.
  So input + creation + read = what count_tokens reports for the same request (count_tokens ignores caching).
- Entries are kept per model, in one `PromptCache` per offline model instance, shared by every request through it;
  an alias and its dated id (claude-haiku-4-5, claude-haiku-4-5-20251001) are one model and share the entries. Deterministic: no randomness, no wall clock unless you leave the default.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from helpers.offline import catalog
from helpers.offline.bpe import (
    MESSAGE_OVERHEAD,
    SYSTEM_OVERHEAD,
    TOOL_OVERHEAD,
    block_text,
    block_tokens,
    continued_turn,
    count_text_tokens,
    without_cache_control,
)
from helpers.offline.faults import OfflineAPIError

__all__ = [
    "PromptCache",
    "SimClock",
    "Position",
    "MIN_CACHEABLE_TOKENS",
    "DEFAULT_MIN_CACHEABLE_TOKENS",
    "MAX_BREAKPOINTS",
    "LOOKBACK_POSITIONS",
    "TTL_SECONDS",
    "DOCS_URL",
    "min_cacheable_tokens",
    "check_breakpoints",
    "request_positions",
]

DOCS_URL = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
MAX_BREAKPOINTS = 4
LOOKBACK_POSITIONS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

# The documented minimum cacheable prompt length, in tokens (the prefix up to a breakpoint), by every name a model
# goes by (from the catalog, where each model's value and its source are).
MIN_CACHEABLE_TOKENS: dict[str, int] = {n: m.min_cache for m in catalog.MODELS for n in (m.id, *m.aliases)}
DEFAULT_MIN_CACHEABLE_TOKENS = 1024  # a name the catalog does not know (never served: the contract refuses it)

_RUN_KINDS = ("tool_use", "tool_result")  # a run of these counts as one lookback position


def min_cacheable_tokens(model: str) -> int:
    """The minimum prefix length `model` caches (an alias and its dated id alike)."""
    info = catalog.lookup(model)
    return info.min_cache if info else DEFAULT_MIN_CACHEABLE_TOKENS


class SimClock:
    """A clock a simulation moves by hand: `clock()` is the time now, `clock.advance(seconds)` moves it on."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a clock does not run backwards")
        self.now += seconds
        return self.now


@dataclass(frozen=True)
class Position:
    """One block boundary of the prefix (tools → system → messages), where an entry can be written or read."""

    path: str  # "tools.0", "system.1", "messages.3.content.0"
    tokens: int  # prompt tokens up to and including this position
    digest: str  # hash of the whole prefix ending here
    ttl: str | None  # "5m" / "1h" when a breakpoint ends here


def _bad(message: str) -> OfflineAPIError:
    return OfflineAPIError(400, "invalid_request_error", message)


def _marker(item, path: str) -> str | None:
    """The TTL of `item`'s cache_control ("5m"/"1h"), None without one; a malformed marker is a 400."""
    control = item.get("cache_control") if isinstance(item, dict) else None
    if control is None:
        return None
    if not isinstance(control, dict) or control.get("type") != "ephemeral":
        raise _bad(f"{path}.cache_control.type: Input should be 'ephemeral'")
    ttl = control.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise _bad(f"{path}.cache_control.ttl: Input should be '5m' or '1h'")
    return ttl


def _blocks(content) -> list:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def check_breakpoints(body: dict) -> list[tuple[str, str]]:
    """The request's breakpoints as (path, ttl), in prefix order; 400 for a bad marker, more than 4, or 1h after 5m."""
    found: list[tuple[str, str]] = []

    def see(item, path):
        ttl = _marker(item, path)
        if ttl:
            found.append((path, ttl))

    for i, tool in enumerate(body.get("tools") or []):
        see(tool, f"tools.{i}")
    if isinstance(body.get("system"), list):
        for j, block in enumerate(body["system"]):
            see(block, f"system.{j}")
    messages = body.get("messages") or []
    for i, message in enumerate(messages):
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            for j, block in enumerate(message["content"]):
                see(block, f"messages.{i}.content.{j}")
    auto = _marker(body, "")
    if auto and messages:
        last = len(messages) - 1
        path = f"messages.{last}.content.{max(0, len(_blocks(messages[last].get('content'))) - 1)}"
        explicit = next((t for p, t in found if p == path), None)  # the last block may carry its own marker
        if explicit is None:
            found.append((path, auto))
        elif auto == "1h" and explicit == "5m":
            raise _bad(
                f"{path}.cache_control.ttl: a '1h' cache breakpoint must come before any '5m' breakpoint "
                "(the top-level '1h' marker lands on this block, which has its own '5m' marker)"
            )
    if len(found) > MAX_BREAKPOINTS:
        raise _bad(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(found)}.")
    seen_5m = False
    for path, ttl in found:
        if ttl == "1h" and seen_5m:
            raise _bad(f"{path}.cache_control.ttl: a '1h' cache breakpoint must come before any '5m' breakpoint")
        seen_5m = seen_5m or ttl == "5m"
    return found


def request_positions(body: dict) -> list[Position]:
    """Every position of the request's prefix with its cumulative token count, prefix hash and breakpoint TTL.

    Token counts follow helpers.offline.bpe.request_tokens term by term: the last position's count plus
    REQUEST_OVERHEAD (the framing after the last block, never cached) is the request's input tokens."""
    breakpoints = dict(check_breakpoints(body))
    positions: list[Position] = []
    info = catalog.lookup(body.get("model"))
    high_res = bool(info and info.high_res)
    digest = hashlib.sha256(catalog.canonical(str(body.get("model"))).encode()).hexdigest()

    def add(path: str, tokens: int, payload) -> None:
        nonlocal digest
        text = json.dumps(payload, sort_keys=True, default=str)
        digest = hashlib.sha256(f"{digest}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()
        positions.append(Position(path, tokens, digest, breakpoints.get(path)))

    tokens = 0  # the request's own framing (REQUEST_OVERHEAD) comes after the last block: never cached
    for i, tool in enumerate(body.get("tools") or []):
        clean = without_cache_control(tool)
        tokens += TOOL_OVERHEAD + count_text_tokens(json.dumps(clean, sort_keys=True))
        add(f"tools.{i}", tokens, ["tool", clean])
    messages = body.get("messages") or []
    system_settings = {"speed": body.get("speed"), "citations": _citations_on(messages)}
    system = body.get("system")
    if system:
        base, texts = tokens, []
        for j, block in enumerate(_blocks(system)):
            texts.append(block_text(block))
            joined = "\n".join(texts)
            tokens = base + (SYSTEM_OVERHEAD + count_text_tokens(joined) if joined else 0)
            add(f"system.{j}", tokens, ["system", without_cache_control(block)] + ([system_settings] if j == 0 else []))
    settings = {
        "tool_choice": body.get("tool_choice"),
        "thinking": body.get("thinking"),
        "output_config": body.get("output_config"),
        "images": _image_count(messages),
        **system_settings,
    }
    live = continued_turn(messages)
    for i, message in enumerate(messages):
        content = message.get("content")
        blocks = _blocks(content)
        tokens += MESSAGE_OVERHEAD
        pending: list = [settings, message.get("role")] if i == 0 else [message.get("role")]
        for j, block in enumerate(blocks):
            if isinstance(content, str):
                tokens += count_text_tokens(content)
            else:
                tokens += block_tokens(block, high_res=high_res, thinking_counts=i == live)
            pending.append(without_cache_control(block))
            path = f"messages.{i}.content.{j}"
            kind = block.get("type") if isinstance(block, dict) else None
            following = blocks[j + 1] if j + 1 < len(blocks) else None
            in_run = (
                kind in _RUN_KINDS
                and isinstance(following, dict)
                and following.get("type") == kind
                and path not in breakpoints
            )
            if not in_run:
                add(path, tokens, ["message", pending])
                pending = []
    return positions


def _image_count(messages: list) -> int:
    """Images anywhere in the messages (in tool results too): adding or removing one invalidates the messages."""
    n = 0
    for m in messages:
        for b in _blocks(m.get("content")):
            if isinstance(b, dict):
                n += b.get("type") == "image"
                inner = b.get("content") if b.get("type") == "tool_result" else None
                n += (
                    sum(1 for s in inner if isinstance(s, dict) and s.get("type") == "image")
                    if isinstance(inner, list)
                    else 0
                )
    return n


def _citations_on(messages: list) -> bool:
    """Whether any document asks for citations (toggling it invalidates system and messages)."""
    return any(
        isinstance(b, dict) and b.get("type") == "document" and (b.get("citations") or {}).get("enabled")
        for m in messages
        for b in _blocks(m.get("content"))
    )


@dataclass
class _Entry:
    ttl: str
    expires_at: float


class PromptCache:
    """The cache entries of one offline model: (model, prefix hash) → lifetime, on a clock you can replace."""

    def __init__(self, clock: Callable[[], float] | None = None):
        self.clock = clock or time.monotonic
        self._entries: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Entries still alive now."""
        now = self.clock()
        return sum(1 for e in self._entries.values() if e.expires_at > now)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _live(self, key: tuple[str, str], now: float) -> _Entry | None:
        entry = self._entries.get(key)
        if entry is not None and entry.expires_at <= now:
            del self._entries[key]
            return None
        return entry

    def apply(self, body: dict, positions: list[Position], total: int) -> dict:
        """Read and write this request's entries; returns its usage fields for `total` input tokens (see above)."""
        marks = [k for k, p in enumerate(positions) if p.ttl]
        if not marks:
            return {}
        model = catalog.canonical(str(body.get("model")))
        minimum = min_cacheable_tokens(model)
        with self._lock:
            now = self.clock()
            read = None
            for mark in reversed(marks):
                for k in range(mark, max(mark - LOOKBACK_POSITIONS, -1), -1):
                    if self._live((model, positions[k].digest), now) is not None:
                        read = k
                        break
                if read is not None:
                    break
            if read is not None:  # reading a prefix uses (and so refreshes) every entry on it
                for p in positions[: read + 1]:
                    entry = self._live((model, p.digest), now)
                    if entry is not None:
                        entry.expires_at = now + TTL_SECONDS[entry.ttl]
            a = positions[read].tokens if read is not None else 0
            b = c = a
            for k in marks:
                p = positions[k]
                if (read is not None and k <= read) or p.tokens < minimum:
                    continue
                self._entries[(model, p.digest)] = _Entry(p.ttl, now + TTL_SECONDS[p.ttl])
                c = p.tokens
                if p.ttl == "1h":
                    b = p.tokens
            if len(self._entries) > 50_000:
                for key in [key for key, e in self._entries.items() if e.expires_at <= now]:
                    del self._entries[key]
        return {
            "input_tokens": total - c,
            "cache_creation_input_tokens": c - a,
            "cache_read_input_tokens": a,
            "cache_creation": {"ephemeral_5m_input_tokens": c - b, "ephemeral_1h_input_tokens": b - a},
        }
