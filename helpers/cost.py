"""The cost of remembering: pricing, a cost ledger, a conversation simulator and its plots. Taught in 03_context_window_overflow.

- `cost_of(usage, model)` prices one call from its `usage` (SDK object or dict).
- `CostLedger` records every call by purpose (chat, summary, extraction, ...); memory strategies take
  one as `ledger=` and call `ledger.record(purpose, model, usage)`.
- `simulate(strategy, script)` runs scripted turns through any *strategy* (an object with
  `turn(text) -> TurnResult`) and returns per-turn tokens and cost as a `SimulationResult`.
- Strategies are built by name from the explicit table `STRATEGIES` (`make_strategy("naive", client, settings)`:
  naive, last_k, stateless, bounded, vector); `register_strategy(name, factory)` adds one of your own.
- `plot_input_tokens` / `plot_cumulative_cost` draw the results (they return the Figure).

It imports the strategies from `helpers.memory` (which imports nothing from here: no cycle, no registration at
import time).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol, runtime_checkable

import anthropic

from .memory import BoundedMemory, HistoryMemory, StatelessMemory, TurnResult, VectorMemory
from .store import mongomock_store

if TYPE_CHECKING:  # pragma: no cover - for type hints only
    from matplotlib.figure import Figure

    from .config import Settings

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
    "plot_recall_and_cost",
    "Strategy",
    "StrategyFactory",
    "STRATEGIES",
    "register_strategy",
    "make_strategy",
    "available_strategies",
    "DEFAULT_KEEP_LAST",
    "SIMULATION_CONTEXT_WINDOW",
    "simulation_client",
    "SimulationResult",
    "simulate",
    "is_overflow",
    "plot_input_tokens",
    "plot_cumulative_cost",
]

# ---------------------------------------------------------------------------- pricing

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
        f"no price for model {model!r} in helpers.cost.PRICES (known: {', '.join(sorted(table))}); "
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


# ---------------------------------------------------------------------------- ledger

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


# ---------------------------------------------------------------------------- strategies

@runtime_checkable
class Strategy(Protocol):
    """A memory strategy: anything with `turn(text) -> TurnResult` (every class in helpers.memory is one)."""

    def turn(self, text: str) -> "TurnResult": ...


StrategyFactory = Callable[..., Strategy]  # factory(client, settings, **kw) -> Strategy

DEFAULT_KEEP_LAST = 6  # messages (3 exchanges) the last-K workaround keeps


def _naive(client: anthropic.Anthropic, settings: "Settings", *, system: str | None = None, model: str | None = None,
           max_tokens: int | None = None, ledger: CostLedger | None = None) -> Strategy:
    """Naive history: every turn resends the whole conversation (HistoryMemory)."""
    return HistoryMemory(client, settings, system=system, model=model, max_tokens=max_tokens, ledger=ledger)


def _last_k(client: anthropic.Anthropic, settings: "Settings", *, keep_last: int = DEFAULT_KEEP_LAST,
            system: str | None = None, model: str | None = None, max_tokens: int | None = None,
            ledger: CostLedger | None = None) -> Strategy:
    """The naive workaround: send only the last `keep_last` messages (HistoryMemory(keep_last=K))."""
    if not isinstance(keep_last, int) or keep_last < 0:
        raise ValueError(f"keep_last must be a whole number of messages ≥ 0, got {keep_last!r}")
    return HistoryMemory(client, settings, system=system, model=model, max_tokens=max_tokens, ledger=ledger,
                         keep_last=keep_last)


def _stateless(client: anthropic.Anthropic, settings: "Settings", **kw: Any) -> Strategy:
    """The goldfish: every call sends only the new message (StatelessMemory)."""
    return StatelessMemory(client, settings, **kw)


def _bounded(client: anthropic.Anthropic, settings: "Settings", *, store: Any = None, budget: int | None = None,
             summary_max_tokens: int | None = None, system: str | None = None, model: str | None = None,
             max_tokens: int | None = None, ledger: CostLedger | None = None, user_id: str = "simulation",
             session_id: str | None = None) -> Strategy:
    """Bounded memory (window + rolling summary); an in-memory store unless `store` is given."""
    return BoundedMemory(client, settings, store=store or mongomock_store("simulation"), user_id=user_id,
                         session_id=session_id, budget=budget, summary_max_tokens=summary_max_tokens, system=system,
                         model=model, max_tokens=max_tokens, ledger=ledger)


def _vector(client: anthropic.Anthropic, settings: "Settings", *, store: Any = None, **kw: Any) -> Strategy:
    """Vector memory (bounded + long-term retrieval); an in-memory store unless `store` is given."""
    kw.setdefault("user_id", "simulation")
    return VectorMemory(client, settings, store=store or mongomock_store("simulation"), **kw)


STRATEGIES: dict[str, StrategyFactory] = {"naive": _naive, "last_k": _last_k, "stateless": _stateless,
                                          "bounded": _bounded, "vector": _vector}


def register_strategy(name: str, factory: StrategyFactory, *, replace: bool = False) -> StrategyFactory:
    """Add a strategy factory `factory(client, settings, **kw) -> Strategy` under `name`; returns the factory."""
    if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"strategy name must be lower_snake_case, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory for {name!r} must be callable: factory(client, settings, **kw) -> strategy")
    if name in STRATEGIES and STRATEGIES[name] is not factory and not replace:
        raise ValueError(f"strategy {name!r} is already registered; pass replace=True to override it")
    STRATEGIES[name] = factory
    return factory


def available_strategies() -> list[str]:
    """Registered strategy names."""
    return sorted(STRATEGIES)


def make_strategy(name: str, client: anthropic.Anthropic, settings: "Settings", **kw) -> Strategy:
    """Build the registered strategy `name` (e.g. "naive", "last_k") with `kw` passed to its factory."""
    names = available_strategies()
    if name not in STRATEGIES:
        raise KeyError(f"unknown strategy {name!r}; registered: {', '.join(names)} "
                       "(add one with helpers.cost.register_strategy)")
    return STRATEGIES[name](client, settings, **kw)


# ---------------------------------------------------------------------------- simulation

SIMULATION_CONTEXT_WINDOW = 100_000_000  # offline window for simulations: large enough never to overflow


def simulation_client(settings: "Settings", *, context_window: int | None = None) -> anthropic.Anthropic:
    """An offline client for simulations (always offline: long runs against the live API cost real money)."""
    from .llm import get_client

    return get_client(settings.with_(anthropic_api_key=None), context_window=context_window or SIMULATION_CONTEXT_WINDOW,
                      faults="", max_retries=0)  # faults="": GTE_OFFLINE_FAULTS does not apply to simulations


def is_overflow(err: BaseException) -> bool:
    """True when `err` (or the error it wraps) is the API's "prompt is too long" BadRequestError."""
    seen = err
    for _ in range(4):
        if isinstance(seen, anthropic.BadRequestError) and "prompt is too long" in str(seen):
            return True
        seen = getattr(seen, "cause", None) or seen.__cause__
        if seen is None:
            return False
    return False


@dataclass
class SimulationResult:
    """Per-turn input/output tokens and USD of one simulated conversation, with totals and a growth fit."""

    strategy: str
    model: str
    input_tokens: list[int] = field(default_factory=list)
    output_tokens: list[int] = field(default_factory=list)
    cost_usd: list[float] = field(default_factory=list)
    replies: list[str] = field(default_factory=list, repr=False)
    overflow_turn: int | None = None       # 1-based turn whose request was too long (the run stopped there)
    overflow_message: str | None = None
    cost_by_purpose: dict | None = None    # from the strategy's CostLedger, when it has one

    @property
    def turns(self) -> int:
        """Turns that completed."""
        return len(self.input_tokens)

    @property
    def total_input_tokens(self) -> int:
        return sum(self.input_tokens)

    @property
    def total_output_tokens(self) -> int:
        return sum(self.output_tokens)

    @property
    def total_cost_usd(self) -> float:
        return sum(self.cost_usd)

    @property
    def max_turn_input_tokens(self) -> int:
        """The largest single request: what must fit in the context window."""
        return max(self.input_tokens, default=0)

    def cumulative_input_tokens(self) -> list[int]:
        out, total = [], 0
        for n in self.input_tokens:
            total += n
            out.append(total)
        return out

    def cumulative_cost_usd(self) -> list[float]:
        out, total = [], 0.0
        for c in self.cost_usd:
            total += c
            out.append(total)
        return out

    def fit_power_law(self) -> float:
        """Exponent k of cumulative input tokens ∝ turn^k: log-log least squares over the second half of turns."""
        import numpy as np

        if self.turns < 4:
            raise ValueError(f"need at least 4 turns to fit a growth exponent, have {self.turns}")
        start = self.turns // 2
        t = np.arange(start + 1, self.turns + 1, dtype=float)
        y = np.asarray(self.cumulative_input_tokens()[start:], dtype=float)
        return float(np.polyfit(np.log(t), np.log(y), 1)[0])

    def fit_quadratic(self) -> tuple[float, float, float]:
        """(a, b, c) of the least-squares fit cumulative cost ≈ a·t² + b·t + c over all turns."""
        import numpy as np

        if self.turns < 3:
            raise ValueError(f"need at least 3 turns to fit a quadratic, have {self.turns}")
        t = np.arange(1, self.turns + 1, dtype=float)
        a, b, c = np.polyfit(t, np.asarray(self.cumulative_cost_usd()), 2)
        return float(a), float(b), float(c)

    def to_dict(self) -> dict:
        """A JSON-ready summary: totals, per-turn lists and the fitted exponent (replies left out)."""
        return {
            "strategy": self.strategy,
            "model": self.model,
            "turns": self.turns,
            "total_input_tokens": self.total_input_tokens,
            "total_output_tokens": self.total_output_tokens,
            "max_turn_input_tokens": self.max_turn_input_tokens,
            "cost_usd": self.total_cost_usd,
            "per_turn_input_tokens": list(self.input_tokens),
            "per_turn_output_tokens": list(self.output_tokens),
            "per_turn_cost_usd": list(self.cost_usd),
            "fitted_exponent": self.fit_power_law() if self.turns >= 4 else None,
            "overflow_turn": self.overflow_turn,
            "overflow_message": self.overflow_message,
            "cost_by_purpose": self.cost_by_purpose,
        }


def simulate(strategy: Strategy, script: Iterable[str], *, progress: bool = False, name: str | None = None,
             model: str | None = None, prices: Mapping[str, Price] | None = None,
             on_overflow: str = "raise") -> SimulationResult:
    """Run every scripted user message through `strategy.turn` and record tokens and USD per turn.

    Cost per turn is the priced `usage` of the chat call; if the strategy has a `CostLedger` (`.ledger`),
    it is every call the ledger recorded during that turn (chat plus any summary/extraction calls).
    `on_overflow="stop"` ends the run at the first "prompt is too long" error and records its turn;
    `"raise"` (default) lets the error propagate.
    """
    if on_overflow not in ("raise", "stop"):
        raise ValueError(f"on_overflow must be 'raise' or 'stop', got {on_overflow!r}")
    if not callable(getattr(strategy, "turn", None)):
        raise TypeError(f"{type(strategy).__name__} is not a strategy: it needs a turn(text) -> TurnResult method")
    texts = list(script)
    model = model or getattr(strategy, "model", None) or "claude-haiku-4-5"
    price_of(model, prices)  # fail before the first turn if the model has no price
    ledger = getattr(strategy, "ledger", None)
    ledger = ledger if isinstance(ledger, CostLedger) else None
    label = name or getattr(strategy, "name", None) or getattr(strategy, "stage", None) or type(strategy).__name__
    result = SimulationResult(strategy=label, model=model)
    from tqdm import tqdm  # text bar: a widget bar saved in a notebook shows "model not found" after a reload

    bar = tqdm(texts, desc=label, unit="turn", disable=not progress, leave=False)
    try:
        for i, text in enumerate(bar, start=1):
            seen = len(ledger.entries) if ledger is not None else 0
            try:
                turn = strategy.turn(text)
            except Exception as err:
                if on_overflow == "stop" and is_overflow(err):
                    result.overflow_turn = i
                    result.overflow_message = str(getattr(err, "cause", None) or err)
                    break
                raise
            if ledger is not None and len(ledger.entries) > seen:
                cost = sum(e.cost_usd for e in ledger.entries[seen:])
            else:
                cost = cost_of({"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}, model, prices)
            result.input_tokens.append(turn.input_tokens)
            result.output_tokens.append(turn.output_tokens)
            result.cost_usd.append(cost)
            result.replies.append(turn.reply)
            bar.set_postfix(input_tokens=turn.input_tokens, refresh=False)
    finally:
        bar.close()
    if ledger is not None:
        result.cost_by_purpose = ledger.totals_by_purpose()
    return result


# ---------------------------------------------------------------------------- plots

def _new_axes():
    """A figure + axes from pyplot, closed at once: returned figures display once and never pile up."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    plt.close(fig)
    return fig, ax


def _title_for(results: Mapping[str, SimulationResult], finding: str, fallback: str) -> str:
    return finding if "naive" in results else fallback


def plot_input_tokens(results: Mapping[str, SimulationResult], context_window: int | None = None, *,
                      title: str | None = None, log: bool = False) -> "Figure":
    """Input tokens of each turn's request per strategy, with the context window as a dashed line.

    `log=True` uses a logarithmic token axis, so flat strategies stay readable beside naive history's growth.
    """
    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, ax = _new_axes()
    for name, r in results.items():
        ax.plot(range(1, r.turns + 1), r.input_tokens, label=f"{name} (max {r.max_turn_input_tokens:,})", lw=2)
        if r.overflow_turn:
            ax.axvline(r.overflow_turn, color="grey", lw=0.8, ls=":")
    if context_window:
        ax.axhline(context_window, color="crimson", ls="--", lw=1.5, label=f"context window ({context_window:,} tokens)")
    ax.set_xlabel("turn")
    ax.set_ylabel("input tokens per request (tokens" + (", log scale)" if log else ")"))
    ax.set_title(title or _title_for(results, "Naive history: every turn re-sends all earlier turns",
                                     "Input tokens per turn"))
    if log:
        ax.set_yscale("log")
    ax.yaxis.set_major_formatter(lambda v, _pos: f"{v:,.0f}")
    ax.set_xlim(left=0)
    if not log:
        ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def plot_cumulative_cost(results: Mapping[str, SimulationResult], fit: bool = True, *,
                         title: str | None = None) -> "Figure":
    """Cumulative USD per strategy; with `fit`, the fitted quadratic a·t² + b·t + c over the naive curve."""
    import numpy as np

    if not results:
        raise ValueError("results is empty: pass {name: SimulationResult}")
    fig, ax = _new_axes()
    for name, r in results.items():
        t = np.arange(1, r.turns + 1)
        fitted = fit and name == "naive" and r.turns >= 3
        ax.plot(t, r.cumulative_cost_usd(), lw=4 if fitted else 2, alpha=0.55 if fitted else 1.0,
                label=f"{name} (total ${r.total_cost_usd:,.4f})")
        if fitted:
            a, b, c = r.fit_quadratic()
            ax.plot(t, a * t**2 + b * t + c, color="black", ls="--", lw=1.2,
                    label=f"quadratic fit a·t² + b·t + c (a = {a:.2g} USD/turn²)")
    ax.set_xlabel("turn")
    ax.set_ylabel("cumulative cost (USD)")
    model = next(iter(results.values())).model
    ax.set_title(title or _title_for(results, f"Naive history: cumulative cost grows with turns² ({model} prices)",
                                     f"Cumulative cost ({model} prices)"))
    ax.yaxis.set_major_formatter(lambda v, _pos: f"${v:,.2f}" if v >= 0.1 or v == 0 else f"${v:,.3f}")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left")
    return fig


def plot_recall_and_cost(table: Mapping[str, Mapping[str, float]], *, title: str | None = None) -> "Figure":
    """Side-by-side bars per strategy: recall of planted items (%) and total cost (USD). Taught in 06_elephant."""
    import matplotlib.pyplot as plt

    names = list(table)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    plt.close(fig)
    recall = [100 * table[n]["recall"] for n in names]
    cost = [table[n]["cost_usd"] for n in names]
    left.barh(names, recall, color="tab:green")
    left.set_xlim(0, 118)  # room for the "100%" label right of a full bar
    left.set_xticks(range(0, 101, 20))
    left.set_xlabel("planted facts and details recalled (%)")
    for y, v in enumerate(recall):
        left.text(v + 1, y, f"{v:.0f}%", va="center")
    right.barh(names, cost, color="tab:blue")
    right.set_xlabel("total cost of the conversation (USD)")
    for y, v in enumerate(cost):
        right.text(v, y, f" ${v:.3f}", va="center")
    right.set_xlim(0, max(cost) * 1.3 if max(cost) > 0 else 1)
    right.set_yticklabels([])
    for ax in (left, right):
        ax.invert_yaxis()
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title or "Only memory that retrieves what matters recalls nearly everything at a flat cost")
    return fig
