"""Pricing and the cost ledger: USD per call from its `usage`. Taught in 03_context_window_overflow, "The cost of resending everything"."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Price",
    "PRICES",
    "PRICING_SOURCE",
    "CACHE_WRITE_MULTIPLIER",
    "CACHE_WRITE_1H_MULTIPLIER",
    "CACHE_READ_MULTIPLIER",
    "CHAT_KIND",
    "MEMORY_KIND",
    "UnknownModelError",
    "kind_of",
    "price_of",
    "usage_counts",
    "cache_write_split",
    "cost_of",
    "LedgerEntry",
    "CostLedger",
]

# USD per million tokens, from the model pricing table of Anthropic's pricing page
# (https://platform.claude.com/docs/en/about-claude/pricing), as read on 2 December 2026. Prompt caching is priced
# relative to base input: a 5-minute cache write costs 1.25x input, a 1-hour cache write 2x input, and a cache hit
# (read) 0.1x input on most models; the page lists a lower hit price for a few newer ones (cache_read below).
PRICING_SOURCE = "Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing), read 2 December 2026"
CACHE_WRITE_MULTIPLIER = 1.25  # 5-minute cache write, x base input price
CACHE_WRITE_1H_MULTIPLIER = 2.0  # 1-hour cache write, x base input price
CACHE_READ_MULTIPLIER = 0.1  # cache hit / refresh, x base input price (unless a model's row says otherwise)

CHAT_KIND = "chat"  # the call that answers the user
MEMORY_KIND = "memory"  # memory maintenance: summary, retention check, extraction, reconciliation, ...


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model; cache prices derive from the input price.

    `cache_read` is the hit price's multiple of input (0.1 unless the table says otherwise), `cache_write` the
    5-minute write's (1.25 unless it says otherwise; a 1-hour write is always 2x). `long_prompt`
    = (tokens, factor): a request whose prompt (input + cache writes + cache reads) is over `tokens` pays `factor`
    times every rate, output included (Claude Haiku 5.5's long-prompt band)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read: float = CACHE_READ_MULTIPLIER
    long_prompt: tuple[int, float] | None = None
    cache_write: float = CACHE_WRITE_MULTIPLIER  # the 5-minute write's multiple of input (1.2 on Claude Haiku 3)

    @property
    def cache_write_per_mtok(self) -> float:
        return self.input_per_mtok * self.cache_write

    @property
    def cache_write_1h_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_1H_MULTIPLIER

    @property
    def cache_read_per_mtok(self) -> float:
        return self.input_per_mtok * self.cache_read


# Every row of the pricing page's model table, by a name the API takes for the model (its alias where it has one;
# any other name of the same model resolves to it through helpers.offline.catalog). Retired models keep their row:
# an old ledger is still priced. Rows whose hit price is not 0.1x input say so.
PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.0, 40.0, cache_read=0.025),  # hits $0.20
    "claude-mythos-5-2": Price(8.0, 40.0, cache_read=0.025),
    "claude-fable-5-1": Price(10.0, 50.0, cache_read=0.025),  # hits $0.25
    "claude-mythos-5-1": Price(10.0, 50.0, cache_read=0.025),
    "claude-fable-5": Price(10.0, 50.0),
    "claude-mythos-5": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0, cache_read=0.05),  # hits $0.20
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(input_per_mtok=5.0, output_per_mtok=25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-sonnet-5-5": Price(2.0, 10.0, cache_read=0.05),  # hits $0.10 since 7 October 2026
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-3-7-sonnet-latest": Price(3.0, 15.0),
    "claude-haiku-5-5": Price(0.10, 0.50, long_prompt=(100_000, 5.0)),  # $0.50 / $2.50 over 100K prompt tokens
    "claude-haiku-4-5": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "claude-3-5-haiku-latest": Price(0.80, 4.0),
    "claude-3-opus-latest": Price(15.0, 75.0),
    "claude-3-haiku-20240307": Price(0.25, 1.25, cache_read=0.12, cache_write=1.2),  # writes $0.30, hits $0.03
}
_SNAPSHOT = re.compile(r"-(?:\d{8}|latest)$")  # claude-haiku-4-5-20251001 → claude-haiku-4-5


class UnknownModelError(KeyError):
    """No price for a model: one sentence naming the models that have one (a KeyError, so older callers that
    catch KeyError still do)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown model"


def price_of(model: str, prices: Mapping[str, Price] | None = None) -> Price:
    """The price of `model`, by any name the API takes for it (an alias, its dated id); UnknownModelError names
    the models that have a price."""
    from helpers.offline.catalog import lookup  # the model names the docs list: aliases and dated ids

    table = PRICES if prices is None else prices
    info = lookup(model)
    for name in (model, *((info.id, *info.aliases) if info else ()), _SNAPSHOT.sub("", model or "")):
        if name and name in table:
            return table[name]
    raise UnknownModelError(
        f"No price for model {model!r}: helpers.pricing.PRICES knows {', '.join(sorted(table))} "
        f"({PRICING_SOURCE}); use one of these, or pass prices={{...}} with its Price."
    )


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def usage_counts(usage: Any) -> dict[str, int]:
    """The four billed token counts of `usage` (SDK `Usage` or dict); missing or None fields count as 0."""
    get = usage.get if isinstance(usage, Mapping) else (lambda name, default=None: getattr(usage, name, default))
    counts = {name: int(get(name, 0) or 0) for name in _USAGE_FIELDS}
    for name in ("input_tokens", "output_tokens"):
        if get(name, None) is None:
            raise ValueError(f"usage has no {name}: pass an SDK Usage or a dict with input_tokens and output_tokens")
    if any(v < 0 for v in counts.values()):
        raise ValueError(f"usage counts must not be negative: {counts}")
    return counts


def cache_write_split(usage: Any) -> tuple[int, int]:
    """(5-minute, 1-hour) cache-write tokens of `usage`, from its `cache_creation` breakdown when it has one.

    Without a breakdown every write counts as a 5-minute write (the API's default TTL)."""
    written = usage_counts(usage)["cache_creation_input_tokens"]
    split = usage.get("cache_creation") if isinstance(usage, Mapping) else getattr(usage, "cache_creation", None)
    if split is None:
        return written, 0
    one_hour = (
        split.get("ephemeral_1h_input_tokens")
        if isinstance(split, Mapping)
        else getattr(split, "ephemeral_1h_input_tokens", 0)
    )
    one_hour = min(written, max(0, int(one_hour or 0)))
    return written - one_hour, one_hour


def cost_of(usage: Any, model: str, prices: Mapping[str, Price] | None = None) -> float:
    """USD for one call from all four usage fields: input, output, cache writes (5-minute 1.25×, 1-hour 2× input,
    split by `usage.cache_creation`) and cache reads (0.1× input, or the model's own hit price); a long-prompt band
    (Haiku 5.5) multiplies every rate when the call's prompt is over it."""
    price = price_of(model, prices)
    c = usage_counts(usage)
    write_5m, write_1h = cache_write_split(usage)
    factor = 1.0
    if price.long_prompt:
        prompt = c["input_tokens"] + c["cache_creation_input_tokens"] + c["cache_read_input_tokens"]
        factor = price.long_prompt[1] if prompt > price.long_prompt[0] else 1.0
    return (
        factor
        * (
            c["input_tokens"] * price.input_per_mtok
            + c["output_tokens"] * price.output_per_mtok
            + write_5m * price.cache_write_per_mtok
            + write_1h * price.cache_write_1h_per_mtok
            + c["cache_read_input_tokens"] * price.cache_read_per_mtok
        )
        / 1_000_000
    )


def kind_of(purpose: str) -> str:
    """ "chat" for the call that answers the user, "memory" for every memory-maintenance call."""
    return CHAT_KIND if purpose == CHAT_KIND else MEMORY_KIND


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded model call: why it was made (purpose, and its kind: chat or memory), which model, its four
    token counts (uncached input, output, cache write, cache read) and its price."""

    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cost_usd: float
    kind: str = CHAT_KIND
    cache_creation_1h_input_tokens: int = 0  # the part of the cache write made with the 1-hour TTL

    @property
    def prompt_tokens(self) -> int:
        """Every prompt token of the call, cached or not: input + cache write + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def usage(self) -> dict:
        """The call's usage as the API reports it, with the 1-hour part of its cache write (for cost_of)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {"ephemeral_1h_input_tokens": self.cache_creation_1h_input_tokens},
        }


_TOTAL_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _totals(entries, key) -> dict[str, dict]:
    totals: dict[str, dict] = {}
    for e in entries:
        t = totals.setdefault(key(e), {"calls": 0, **{name: 0 for name in _TOTAL_FIELDS}, "cost_usd": 0.0})
        t["calls"] += 1
        for name in _TOTAL_FIELDS:
            t[name] += getattr(e, name)
        t["cost_usd"] += e.cost_usd
    return totals


class CostLedger:
    """Every model call a memory strategy makes, priced and grouped by purpose (chat, summary, extraction, ...) or
    by kind (chat vs memory maintenance), with all four token kinds per call and in the totals."""

    def __init__(self, prices: Mapping[str, Price] | None = None):
        self.prices = PRICES if prices is None else prices
        self.entries: list[LedgerEntry] = []

    def record(self, purpose: str, model: str, usage: Any, kind: str | None = None) -> LedgerEntry:
        """Price one call from its `usage` and append it; `kind` defaults to kind_of(purpose). Returns the entry."""
        counts = usage_counts(usage)
        _, one_hour = cache_write_split(usage)
        entry = LedgerEntry(
            purpose,
            model,
            cost_usd=cost_of(usage, model, self.prices),
            kind=kind or kind_of(purpose),
            cache_creation_1h_input_tokens=one_hour,
            **counts,
        )
        self.entries.append(entry)
        return entry

    def totals_by_purpose(self) -> dict[str, dict]:
        """{purpose: {calls, input_tokens, output_tokens, cache_creation_input_tokens, cache_read_input_tokens,
        cost_usd}}, in order of first use."""
        return _totals(self.entries, lambda e: e.purpose)

    def totals_by_kind(self) -> dict[str, dict]:
        """The same totals for "chat" and "memory" (maintenance) calls, in order of first use."""
        return _totals(self.entries, lambda e: e.kind)

    def totals(self) -> dict:
        """The same totals over every call (zeros when none was recorded)."""
        return _totals(self.entries, lambda e: "all").get("all") or {
            "calls": 0,
            **{name: 0 for name in _TOTAL_FIELDS},
            "cost_usd": 0.0,
        }

    def total_cost(self) -> float:
        """USD of every recorded call."""
        return sum(e.cost_usd for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"CostLedger({len(self.entries)} calls, ${self.total_cost():.4f})"
