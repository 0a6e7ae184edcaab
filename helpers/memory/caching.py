"""Prompt-cache breakpoints on a request, the history list with caching on, and the cache-aware layout per model. Taught in further/02_prompt_caching, section 'Caching naive history: the price, not the window'.

Prompt caching (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): a `cache_control`
breakpoint on a content block asks the API to keep the request's prefix up to that block. A later request
that starts with exactly the same prefix reads it from the cache at 0.1x the input price instead of paying
for it again; writing it costs 1.25x once (5-minute entries, refreshed by each hit; 1-hour entries cost 2x).
`usage` then splits the input into `input_tokens` (uncached), `cache_creation_input_tokens` and
`cache_read_input_tokens`. Prefixes shorter than the model's minimum cacheable length are simply not cached.

The cache-aware layout (going-further notebook 2, 'Cache-aware bounded memory'). Cache-aware bounded memory
(BoundedMemory(cache_aware=True)) lets its window grow to a high mark, then folds it down
to a low mark in one summary call; between two folds every request starts with the previous one, so its prefix can
be read from the prompt cache. Whether that pays depends on the model: a prefix shorter than the model's minimum
cacheable length is never cached (claude-haiku-4-5: 4,096 tokens; claude-sonnet-4-6: 1,024; helpers.offline's
`min_cacheable_tokens`, from the docs), a fold rewrites the whole prefix (a new summary, a shorter window), and a
cache entry dies if the next turn comes later than its TTL.
`choose_layout` picks the marks (and whether to send breakpoints, and which TTL) that this cost model says are
cheapest per turn, for the model's prices (helpers.pricing) and minimum:

- one fold cycle: right after a fold the window holds about `low - exchange/2` tokens (whole exchanges of
  `exchange` tokens each, at most `low`); each turn adds one exchange until the window passes `high`, then folds.
  Turn k of the cycle sends a prefix P_k = base + window (base: persona + summary + framing), then its new user
  turn (counted in the next turn's exchange).
- with breakpoints, turn k reads P_(k-1) at the cache-read price if that prefix was long enough to be cached and the
  entry is still alive (the pace between turns is under the TTL), and pays the rest at the cache-write price if
  P_k reaches the minimum (else at the input price). Without breakpoints every token is paid at the input price.
- each fold costs its summary and fact-extraction calls (both read the folded turns, plus FOLD_PROMPT_TOKENS of
  instructions and the summary) at the summary model's prices.
- USD per turn = (every turn's input of the cycle + the fold) / turns per cycle. The replies are the same in every
  layout, so they are left out of the comparison (not of any bill).

Candidates: the budget's own marks (high = budget, low = low_water x budget), without and with breakpoints (each
TTL); and a larger window: the low mark is the budget's, or, when the prefix right after a fold at it may be
shorter than the model's minimum, the least low mark whose prefix after a fold is cacheable (base + low - one
exchange), with every high mark from the budget up to one summary call's bound (so a fold stays one summary call).
A higher mark folds less often: each fold rewrites the prefix at the cache-write price and pays its summary and
extraction calls, against more tokens read from the cache between folds; the cost model weighs the two, on every
model. The window never keeps less than the budget's marks keep, so a larger layout only holds, word for word,
turns the summary would otherwise hold. Costs are estimates for choosing; the bill is what the simulator measures
(`bench cost`).

Padded to the minimum (BoundedMemory(cache_aware=True, pad_to_cache=True); going-further notebook 2, 'Padding
the stable prefix'): the persona is followed by pinned text (`pad_to_cache` as a string: the app's own reference
text; True: PAD_FILLER, explicit neutral filler that states nothing) until persona + pinned text alone reach the
model's minimum (measured with count_tokens, plus PAD_MARGIN), and that block carries its own breakpoint before
the summary. So the request is cacheable from turn 1, turn 2 reads it, and a fold (a new summary) rewrites only
what follows it: `pinned_tokens` in the cost model is read from the cache at the start of every fold cycle, and the
budget's own marks are already cacheable. What it costs: those tokens read at 0.1x the input price on every turn,
written once at 1.25x (again after any gap longer than the TTL), and a longer context for the model to read.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from helpers.memory.history import HistoryMemory
from helpers.offline import min_cacheable_tokens
from helpers.offline.cache import TTL_SECONDS
from helpers.pricing import Price, price_of

__all__ = [
    "EPHEMERAL",
    "ONE_HOUR",
    "cache_control_for",
    "with_cache_breakpoints",
    "reuses_prefix",
    "CachedHistoryMemory",
    "Conditions",
    "CacheLayout",
    "choose_layout",
    "fold_cycle_usd",
    "DEFAULT_PACE_SECONDS",
    "FOLD_PROMPT_TOKENS",
    "MARK_STEP",
    "PAD_FILLER",
    "PAD_MARGIN",
    "padded_system",
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


# ---------------------------------------------------------------------------- the cache-aware layout

DEFAULT_PACE_SECONDS = 30.0  # assumed seconds between two user turns: reading a reply, typing the next message
# Tokens of instructions a fold's two calls read besides the folded turns and the summary: the summary task and
# the fact-extraction task with its tool (measured offline on the trip chat: about 270 + 330).
FOLD_PROMPT_TOKENS = 600
MARK_STEP = 100  # high marks are tried this many tokens apart
# Explicit filler for a stable prefix padded to the minimum: it says what it is, and states no name, number, place,
# instruction or fact, so neither a real model nor the offline one can read anything from it.
PAD_FILLER = (
    "This paragraph is padding. It repeats so that the fixed start of the prompt is long enough to be kept in "
    "the prompt cache, and it can be skipped when reading: it adds no rule, no preference and no knowledge, and "
    "it changes nothing in how to answer. "
)
PAD_MARGIN = 32  # tokens above the minimum a padded block aims at (a tokenizer can count the framing differently)


@dataclass(frozen=True)
class Conditions:
    """What the cost model is told about one conversation; the token counts are measured from its session."""

    model: str  # the chat model: its prices and minimum cacheable length
    budget: int  # the window budget (the plain layout's high mark)
    low_water: float  # the plain layout keeps low_water x budget after a fold
    base_tokens: int  # persona + summary + framing of a request, as counted
    exchange_tokens: int  # one exchange (user turn + reply), the mean of the window's
    summary_tokens: int  # the summary a fold writes (its cap)
    upkeep_model: str | None = None  # the model of the summary and extraction calls (None: the chat model)
    pace_seconds: float = DEFAULT_PACE_SECONDS  # expected seconds between turns
    ttl: str | None = None  # "5m" or "1h"; None: the cheaper
    max_fold_tokens: int = 4000  # one summary call's bound (helpers.memory.pending): a fold is one call
    max_fold_messages: int = 40
    grow: bool = True  # False: keep the budget's marks (choose only breakpoints and TTL); True: larger if cheaper
    pinned_tokens: int = 0  # the start of base with its own breakpoint, unchanged by a fold (padded: persona + pad)


@dataclass(frozen=True)
class CacheLayout:
    """Where the window folds and how requests are cached, with the cost model's estimate per turn.

    The window grows past `high`, then keeps at most `low` tokens; with `breakpoints`, requests carry cache_control
    with `ttl`; `minimum` is the model's minimum cacheable prefix. `usd_per_turn`: the model's input + fold cost per
    turn for this layout; `plain_usd_per_turn`: the same for the budget's own marks without breakpoints."""

    low: int
    high: int
    breakpoints: bool
    ttl: str
    minimum: int
    usd_per_turn: float
    plain_usd_per_turn: float

    @property
    def cache_control(self) -> dict:
        """The breakpoint marker for this layout's TTL (the 5-minute default carries no "ttl")."""
        return {"type": "ephemeral"} if self.ttl == "5m" else {"type": "ephemeral", "ttl": self.ttl}

    def to_dict(self) -> dict:
        return asdict(self)


def fold_cycle_usd(
    low: float,
    high: float,
    conditions: Conditions,
    *,
    breakpoints: bool,
    ttl: str = "5m",
    prices: dict[str, Price] | None = None,
) -> float:
    """USD per turn of one fold cycle from `low` to past `high` under `conditions` (the module docstring's model)."""
    c = conditions
    price, upkeep = price_of(c.model, prices), price_of(c.upkeep_model or c.model, prices)
    minimum = min_cacheable_tokens(c.model)
    e = max(1.0, float(c.exchange_tokens))
    window, prefixes = max(0.0, low - e / 2), []
    while True:
        prefixes.append(c.base_tokens + window)  # the newest user turn rides after it: counted in the next e
        window += e
        if window > high:
            break
    alive = c.pace_seconds < TTL_SECONDS[ttl]
    write = price.cache_write_1h_per_mtok if ttl == "1h" else price.cache_write_per_mtok
    # cached: the prefix a live cache entry holds from the turn before; a fold keeps only the pinned block's entry
    pinned = float(c.pinned_tokens) if c.pinned_tokens >= minimum else 0.0
    total, cached = 0.0, pinned
    for p in prefixes:
        if not breakpoints:
            total += p * price.input_per_mtok
            continue
        read = cached if alive else 0.0
        total += read * price.cache_read_per_mtok + (p - read) * (write if p >= minimum else price.input_per_mtok)
        cached = p if p >= minimum else 0.0
    folded = len(prefixes) * e  # what the fold hands to the summary and to the fact extraction
    total += (2 * folded + FOLD_PROMPT_TOKENS + c.summary_tokens) * upkeep.input_per_mtok
    total += c.summary_tokens * upkeep.output_per_mtok
    return total / len(prefixes) / 1_000_000


def choose_layout(conditions: Conditions, prices: dict[str, Price] | None = None) -> CacheLayout:
    """The cheapest layout under the cost model (module docstring). A model without a price keeps the budget's
    marks with breakpoints (nothing to compare with); a `ttl` other than "5m", "1h" or None is a ValueError."""
    c = conditions
    if c.ttl is not None and c.ttl not in TTL_SECONDS:
        raise ValueError(f"cache ttl must be one of {sorted(TTL_SECONDS)} or None (the cheaper), got {c.ttl!r}")
    try:
        price_of(c.model, prices), price_of(c.upkeep_model or c.model, prices)
    except KeyError:
        low = int(c.budget * c.low_water)
        return CacheLayout(low, c.budget, True, c.ttl or "5m", min_cacheable_tokens(c.model), math.nan, math.nan)
    rounded = replace(c, exchange_tokens=max(1, round(c.exchange_tokens / 10) * 10))  # similar turns, one choice
    return _choose(rounded) if prices is None else _choose.__wrapped__(rounded, prices)


@functools.lru_cache(maxsize=4096)
def _choose(c: Conditions, prices: dict[str, Price] | None = None) -> CacheLayout:
    minimum, e = min_cacheable_tokens(c.model), c.exchange_tokens
    low0 = int(c.budget * c.low_water)
    plain = fold_cycle_usd(low0, c.budget, c, breakpoints=False, prices=prices)
    best = CacheLayout(low0, c.budget, False, "5m", minimum, plain, plain)
    shapes = [(low0, c.budget)]  # the budget's own marks, with breakpoints
    # the least low mark whose prefix right after a fold is cacheable: the trim keeps whole exchanges, so at
    # worst one exchange less than the mark
    low = max(low0, math.ceil((minimum - c.base_tokens + e) / MARK_STEP) * MARK_STEP)
    if c.grow:  # a larger window: cacheable after a fold, and folded less often (each fold rewrites the prefix)
        span = min(c.max_fold_tokens - 2 * e, (c.max_fold_messages // 2 - 2) * e)  # a fold drops ~high - low + 2e
        shapes += [(low, high) for high in range(max(c.budget, low + MARK_STEP), low + span + 1, MARK_STEP)]
    for ttl in TTL_SECONDS if c.ttl is None else (c.ttl,):
        for low, high in shapes:
            usd = fold_cycle_usd(low, high, c, breakpoints=True, ttl=ttl, prices=prices)
            if usd < best.usd_per_turn - 1e-12:
                best = CacheLayout(low, high, True, ttl, minimum, usd, plain)
    return best


def padded_system(client: Any, model: str, persona: str, pinned: str | None = None) -> tuple[str, int]:
    """`persona`, then `pinned` (None: nothing of the app's own), then PAD_FILLER repeated until the whole reaches
    `model`'s minimum cacheable length plus PAD_MARGIN: the text and its tokens, both measured with
    `client.messages.count_tokens` (the system prompt of a request with one one-token message, less that message).
    A persona that already reaches it is returned as it is."""
    target = min_cacheable_tokens(model) + PAD_MARGIN

    def count(text: str) -> int:
        one = [{"role": "user", "content": "."}]
        return client.messages.count_tokens(model=model, system=text, messages=one).input_tokens - 1

    text = f"{persona}\n\n{pinned}" if pinned else persona
    tokens = count(text)
    if tokens >= target:
        return text, tokens
    unit = max(1, count(f"{persona}\n\n{PAD_FILLER * 8}") - count(persona)) / 8  # tokens per filler paragraph
    repeats = max(1, math.ceil((target - tokens) / unit))
    while True:
        padded = f"{text}\n\n{PAD_FILLER * repeats}".rstrip()
        tokens = count(padded)
        if tokens >= target:
            return padded, tokens
        repeats += max(1, math.ceil((target - tokens) / unit))
