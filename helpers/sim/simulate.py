"""The conversation simulator: tokens and USD per turn of a scripted chat through a memory strategy. Taught in 03_context_window_overflow, "The cost of resending everything".

The strategies it runs are built by name from the table in helpers/sim/strategies.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic
import numpy as np
from tqdm import tqdm  # text bar: a widget bar saved in a notebook shows "model not found" after a reload

from helpers.config import Settings
from helpers.llm import REPLY_TOKENS, get_client, offline_transport
from helpers.offline import SimClock
from helpers.pricing import CostLedger, Price, cost_of, price_of
from helpers.sim.strategies import Strategy, make_strategy

__all__ = [
    "SIMULATION_CONTEXT_WINDOW",
    "REPLY_TOKENS",
    "SECONDS_PER_TURN",
    "simulation_client",
    "run_strategies",
    "reply_tokens_of",
    "SimulationResult",
    "simulate",
    "is_overflow",
]


SIMULATION_CONTEXT_WINDOW = 100_000_000  # offline window for simulations: large enough never to overflow

# REPLY_TOKENS (helpers.llm): the reply length every simulation assumes. Simulated replies are padded to it with
# neutral text that states nothing (helpers.offline.model.PADDING), so what the model is told, and therefore every
# memory effect, is unchanged; only the tokens are realistic.

# Simulated time between two user turns, in seconds: reading a reply and typing the next message. The offline
# prompt cache runs on a simulated clock moved by this much per turn, so 5-minute cache entries live as long as
# they would in a chat at this pace (a slower pace lets them expire between turns).
SECONDS_PER_TURN = 30.0


def simulation_client(
    settings: Settings, *, context_window: int | None = None, reply_tokens: int | None = REPLY_TOKENS
) -> anthropic.Anthropic:
    """The client for simulations, replays, benchmarks and imports: offline even with a key set (they measure tokens
    and memory, and hundreds of calls on a shared classroom key cost money and hit rate limits); SIMULATE_LIVE=1
    sends them to the live API on purpose.

    Offline, its chat replies are padded to `reply_tokens` tokens (default REPLY_TOKENS; None: the reader's own
    length) and its prompt cache runs on a `SimClock` that `simulate` moves SECONDS_PER_TURN per turn."""
    if settings.simulate_live and settings.anthropic_api_key:
        return get_client(settings, role="replay")
    return get_client(
        settings.with_(anthropic_api_key=None),
        context_window=context_window or SIMULATION_CONTEXT_WINDOW,
        faults="",
        max_retries=0,
        role="replay",  # faults="": GTE_OFFLINE_FAULTS does not apply here
        reply_tokens=reply_tokens,
        clock=SimClock(),
    )  # the prompt cache runs on simulated time


def _clock_of(strategy: Any) -> Any:
    """The simulated clock of the offline model behind `strategy`'s client, or None."""
    client = getattr(strategy, "client", None)
    transport = offline_transport(client) if isinstance(client, anthropic.Anthropic) else None
    clock = getattr(transport.model, "clock", None) if transport is not None else None
    return clock if callable(getattr(clock, "advance", None)) else None


def reply_tokens_of(client: Any) -> int | None:
    """The reply length an offline client pads to (None: unpadded, or a live client)."""
    transport = offline_transport(client) if isinstance(client, anthropic.Anthropic) else None
    return transport.model.reply_tokens if transport is not None else None


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
    input_tokens: list[int] = field(default_factory=list)  # usage.input_tokens: the uncached part
    output_tokens: list[int] = field(default_factory=list)
    cache_write_tokens: list[int] = field(default_factory=list)  # usage.cache_creation_input_tokens
    cache_read_tokens: list[int] = field(default_factory=list)  # usage.cache_read_input_tokens
    cost_usd: list[float] = field(default_factory=list)
    replies: list[str] = field(default_factory=list, repr=False)
    overflow_turn: int | None = None  # 1-based turn whose request was too long (the run stopped there)
    overflow_message: str | None = None
    cost_by_purpose: dict | None = None  # from the strategy's CostLedger, when it has one
    reply_tokens: int | None = None  # the reply length the offline model padded to (None: unpadded/live)

    @property
    def request_tokens(self) -> list[int]:
        """Each turn's whole request (uncached input + cache writes + cache reads): what must fit the window."""
        extra = [w + r for w, r in zip(self.cache_write_tokens, self.cache_read_tokens)]
        extra += [0] * (len(self.input_tokens) - len(extra))
        return [i + e for i, e in zip(self.input_tokens, extra)]

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
        """The largest single request (cached parts included): what must fit in the context window."""
        return max(self.request_tokens, default=0)

    def cumulative_input_tokens(self) -> list[int]:
        """Running total of request tokens (cached parts included)."""
        out, total = [], 0
        for n in self.request_tokens:
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
        if self.turns < 4:
            raise ValueError(f"need at least 4 turns to fit a growth exponent, have {self.turns}")
        start = self.turns // 2
        t = np.arange(start + 1, self.turns + 1, dtype=float)
        y = np.asarray(self.cumulative_input_tokens()[start:], dtype=float)
        return float(np.polyfit(np.log(t), np.log(y), 1)[0])

    def fit_quadratic(self) -> tuple[float, float, float]:
        """(a, b, c) of the least-squares fit cumulative cost ≈ a·t² + b·t + c over all turns."""
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
            "total_cache_write_tokens": sum(self.cache_write_tokens),
            "total_cache_read_tokens": sum(self.cache_read_tokens),
            "reply_tokens": self.reply_tokens,
            "max_turn_input_tokens": self.max_turn_input_tokens,
            "cost_usd": self.total_cost_usd,
            "per_turn_input_tokens": list(self.input_tokens),
            "per_turn_output_tokens": list(self.output_tokens),
            "per_turn_cache_write_tokens": list(self.cache_write_tokens),
            "per_turn_cache_read_tokens": list(self.cache_read_tokens),
            "per_turn_cost_usd": list(self.cost_usd),
            "fitted_exponent": self.fit_power_law() if self.turns >= 4 else None,
            "overflow_turn": self.overflow_turn,
            "overflow_message": self.overflow_message,
            "cost_by_purpose": self.cost_by_purpose,
        }


def simulate(
    strategy: Strategy,
    script: Iterable[str],
    *,
    progress: bool = False,
    name: str | None = None,
    model: str | None = None,
    prices: Mapping[str, Price] | None = None,
    on_overflow: str = "raise",
    seconds_per_turn: float = SECONDS_PER_TURN,
) -> SimulationResult:
    """Run every scripted user message through `strategy.turn` and record tokens and USD per turn.

    Cost per turn is the priced `usage` of the chat call; if the strategy has a `CostLedger` (`.ledger`),
    it is every call the ledger recorded during that turn (chat plus any summary/extraction calls), and the
    cache writes and reads of the turn's chat calls come from it too (all four usage fields are priced).
    `on_overflow="stop"` ends the run at the first "prompt is too long" error and records its turn;
    `"raise"` (default) lets the error propagate. On a simulation client the prompt cache's clock moves
    `seconds_per_turn` before each turn.
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
    result = SimulationResult(
        strategy=label, model=model, reply_tokens=reply_tokens_of(getattr(strategy, "client", None))
    )
    # On stdout and left in place: a bar on stderr that clears itself leaves an empty pink strip in the notebook.
    bar = tqdm(texts, desc=label, unit="turn", disable=not progress, leave=True, file=sys.stdout)
    clock = _clock_of(strategy)
    try:
        for i, text in enumerate(bar, start=1):
            if clock is not None and i > 1:
                clock.advance(seconds_per_turn)
            seen = len(ledger.entries) if ledger is not None else 0
            try:
                turn = strategy.turn(text)
            except Exception as err:
                if on_overflow == "stop" and is_overflow(err):
                    result.overflow_turn = i
                    result.overflow_message = str(getattr(err, "cause", None) or err)
                    break
                raise
            chats = [e for e in ledger.entries[seen:] if e.purpose == "chat"] if ledger is not None else []
            if ledger is not None and len(ledger.entries) > seen:
                cost = sum(e.cost_usd for e in ledger.entries[seen:])
            else:
                cost = cost_of({"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}, model, prices)
            result.cache_write_tokens.append(sum(e.cache_creation_input_tokens for e in chats))
            result.cache_read_tokens.append(sum(e.cache_read_input_tokens for e in chats))
            result.input_tokens.append(sum(e.input_tokens for e in chats) if chats else turn.input_tokens)
            result.output_tokens.append(turn.output_tokens)
            result.cost_usd.append(cost)
            result.replies.append(turn.reply)
            bar.set_postfix(input_tokens=turn.input_tokens, refresh=False)
    finally:
        bar.close()
    if ledger is not None:
        result.cost_by_purpose = ledger.totals_by_purpose()
    return result


def run_strategies(
    settings: Settings, script: list[str], options: Mapping[str, Mapping[str, Any]]
) -> dict[str, SimulationResult]:
    """Each strategy named in `options` (a make_strategy name -> its keyword options) on the same `script`, on its own
    simulation client, with a CostLedger so its summary and extraction calls are priced too."""
    results = {}
    for name, kw in options.items():
        memory = make_strategy(name, simulation_client(settings), settings, ledger=CostLedger(), **kw)
        results[name] = simulate(memory, script, name=name)
    return results
