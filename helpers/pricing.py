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
    "kind_of",
    "price_of",
    "usage_counts",
    "cache_write_split",
    "cost_of",
    "LedgerEntry",
    "CostLedger",
]

# USD per million tokens, from Anthropic's pricing page (https://platform.claude.com/docs/en/about-claude/pricing,
# also claude.com/pricing), as of 2026. Prompt caching is priced relative to base input: a 5-minute cache
# write costs 1.25× input, a 1-hour cache write 2× input, a cache hit (read) 0.1× input.
PRICING_SOURCE = "Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing), as of 2026"
CACHE_WRITE_MULTIPLIER = 1.25  # 5-minute cache write, × base input price
CACHE_WRITE_1H_MULTIPLIER = 2.0  # 1-hour cache write, × base input price
CACHE_READ_MULTIPLIER = 0.1  # cache hit / refresh, × base input price

CHAT_KIND = "chat"  # the call that answers the user
MEMORY_KIND = "memory"  # memory maintenance: summary, retention check, extraction, reconciliation, ...


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model; cache prices derive from the input price."""

    input_per_mtok: float
    output_per_mtok: float

    @property
    def cache_write_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_MULTIPLIER

    @property
    def cache_write_1h_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_1H_MULTIPLIER

    @property
    def cache_read_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_READ_MULTIPLIER


PRICES: dict[str, Price] = {
    "claude-haiku-4-5": Price(input_per_mtok=1.0, output_per_mtok=5.0),
    "claude-sonnet-4-5": Price(input_per_mtok=3.0, output_per_mtok=15.0),
    "claude-opus-4-5": Price(input_per_mtok=5.0, output_per_mtok=25.0),
}

_SNAPSHOT = re.compile(r"-(?:\d{8}|latest)$")  # claude-haiku-4-5-20251001 → claude-haiku-4-5


def price_of(model: str, prices: Mapping[str, Price] | None = None) -> Price:
    """The price of `model` (a dated snapshot id resolves to its alias); KeyError names the table to extend."""
    table = PRICES if prices is None else prices
    if model in table:
        return table[model]
    alias = _SNAPSHOT.sub("", model or "")
    if alias in table:
        return table[alias]
    raise KeyError(
        f"no price for model {model!r} in helpers.pricing.PRICES (known: {', '.join(sorted(table))}); "
        f"add it there or pass prices=... ({PRICING_SOURCE})"
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
    """USD for one call from all four usage fields: input, output, cache writes (5-minute 1.25×, 1-hour 2× input)
    and cache reads (0.1× input)."""
    price = price_of(model, prices)
    c = usage_counts(usage)
    write_5m, write_1h = cache_write_split(usage)
    return (
        c["input_tokens"] * price.input_per_mtok
        + c["output_tokens"] * price.output_per_mtok
        + write_5m * price.cache_write_per_mtok
        + write_1h * price.cache_write_1h_per_mtok
        + c["cache_read_input_tokens"] * price.cache_read_per_mtok
    ) / 1_000_000


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
