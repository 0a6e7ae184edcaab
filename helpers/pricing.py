"""Pricing and the cost ledger: USD per call from its `usage`. Taught in 03_context_window_overflow, "The cost of resending everything"."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = [
    "Price",
    "PRICES",
    "PRICING_SOURCE",
    "CACHE_WRITE_MULTIPLIER",
    "CACHE_READ_MULTIPLIER",
    "price_of",
    "usage_counts",
    "cost_of",
    "LedgerEntry",
    "CostLedger",
]

# USD per million tokens, from Anthropic's pricing page (https://platform.claude.com/docs/en/about-claude/pricing,
# also claude.com/pricing), as of 2026. Prompt caching is priced relative to base input: a 5-minute cache
# write costs 1.25× input, a cache hit (read) 0.1× input. (1-hour cache writes, 2× input, are not used here.)
PRICING_SOURCE = "Anthropic pricing page (platform.claude.com/docs/en/about-claude/pricing), as of 2026"
CACHE_WRITE_MULTIPLIER = 1.25  # 5-minute cache write, × base input price
CACHE_READ_MULTIPLIER = 0.1    # cache hit / refresh, × base input price


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model; cache prices derive from the input price."""

    input_per_mtok: float
    output_per_mtok: float

    @property
    def cache_write_per_mtok(self) -> float:
        return self.input_per_mtok * CACHE_WRITE_MULTIPLIER

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
        f"add it there or pass prices=... ({PRICING_SOURCE})")


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


def cost_of(usage: Any, model: str, prices: Mapping[str, Price] | None = None) -> float:
    """USD for one call: input, output, cache writes (1.25× input) and cache reads (0.1× input)."""
    price = price_of(model, prices)
    c = usage_counts(usage)
    return (c["input_tokens"] * price.input_per_mtok
            + c["output_tokens"] * price.output_per_mtok
            + c["cache_creation_input_tokens"] * price.cache_write_per_mtok
            + c["cache_read_input_tokens"] * price.cache_read_per_mtok) / 1_000_000


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded model call: why it was made, which model, its token counts and its price."""

    purpose: str
    model: str
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    cost_usd: float


class CostLedger:
    """Every model call a memory strategy makes, priced and grouped by purpose (chat, summary, extraction, ...)."""

    def __init__(self, prices: Mapping[str, Price] | None = None):
        self.prices = PRICES if prices is None else prices
        self.entries: list[LedgerEntry] = []

    def record(self, purpose: str, model: str, usage: Any) -> LedgerEntry:
        """Price one call from its `usage` and append it; returns the entry."""
        counts = usage_counts(usage)
        entry = LedgerEntry(purpose, model, cost_usd=cost_of(counts, model, self.prices), **counts)
        self.entries.append(entry)
        return entry

    def totals_by_purpose(self) -> dict[str, dict]:
        """{purpose: {calls, input_tokens, output_tokens, cost_usd}}, in order of first use."""
        totals: dict[str, dict] = {}
        for e in self.entries:
            t = totals.setdefault(e.purpose, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0})
            t["calls"] += 1
            t["input_tokens"] += e.input_tokens
            t["output_tokens"] += e.output_tokens
            t["cost_usd"] += e.cost_usd
        return totals

    def total_cost(self) -> float:
        """USD of every recorded call."""
        return sum(e.cost_usd for e in self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __repr__(self) -> str:
        return f"CostLedger({len(self.entries)} calls, ${self.total_cost():.4f})"
