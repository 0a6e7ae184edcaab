"""The strategy table: every memory strategy by name, built by one factory each, and how to add one. Taught in 03_context_window_overflow, "The cost of resending everything".

A strategy is anything with `turn(text) -> TurnResult`; the simulator (helpers/sim/simulate.py), the notebooks
and `python -m helpers.bench --strategy` build them by name with `make_strategy`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import anthropic

from helpers.config import Settings
from helpers.db.store import Store, mongomock_store
from helpers.memory import BoundedMemory, CachedHistoryMemory, HistoryMemory, StatelessMemory, TurnResult, VectorMemory
from helpers.memory.caching import DEFAULT_PACE_SECONDS
from helpers.memory_tool import MemoryToolMemory
from helpers.pricing import CostLedger

__all__ = [
    "Strategy",
    "StrategyFactory",
    "STRATEGIES",
    "register_strategy",
    "make_strategy",
    "available_strategies",
    "DEFAULT_KEEP_LAST",
]


@runtime_checkable
class Strategy(Protocol):
    """A memory strategy: anything with `turn(text) -> TurnResult` (every class in helpers.memory is one)."""

    def turn(self, text: str) -> TurnResult: ...


StrategyFactory = Callable[..., Strategy]  # factory(client, settings, **kw) -> Strategy

DEFAULT_KEEP_LAST = 6  # messages (3 exchanges) the last-K workaround keeps


def _naive(
    client: anthropic.Anthropic,
    settings: Settings,
    *,
    system: str | None = None,
    model: str | None = None,
    max_tokens: int | None = None,
    ledger: CostLedger | None = None,
) -> Strategy:
    """Naive history: every turn resends the whole conversation (HistoryMemory)."""
    return HistoryMemory(client, settings, system=system, model=model, max_tokens=max_tokens, ledger=ledger)


def _naive_cached(
    client: anthropic.Anthropic,
    settings: Settings,
    *,
    system: str | None = None,
    model: str | None = None,
    max_tokens: int | None = None,
    ledger: CostLedger | None = None,
    cache_ttl: str = "5m",
) -> Strategy:
    """Naive history with prompt caching: breakpoints on the system prompt and the newest message (TTL `cache_ttl`)."""
    return CachedHistoryMemory(
        client, settings, system=system, model=model, max_tokens=max_tokens, ledger=ledger, cache_ttl=cache_ttl
    )


def _last_k(
    client: anthropic.Anthropic,
    settings: Settings,
    *,
    keep_last: int = DEFAULT_KEEP_LAST,
    system: str | None = None,
    model: str | None = None,
    max_tokens: int | None = None,
    ledger: CostLedger | None = None,
) -> Strategy:
    """The naive workaround: send only the last `keep_last` messages (HistoryMemory(keep_last=K))."""
    if not isinstance(keep_last, int) or keep_last < 0:
        raise ValueError(f"keep_last must be a whole number of messages ≥ 0, got {keep_last!r}")
    return HistoryMemory(
        client, settings, system=system, model=model, max_tokens=max_tokens, ledger=ledger, keep_last=keep_last
    )


def _stateless(client: anthropic.Anthropic, settings: Settings, **kw: Any) -> Strategy:
    """No memory at all: every turn is sent alone (StatelessMemory)."""
    return StatelessMemory(client, settings, **kw)


def _bounded(
    client: anthropic.Anthropic,
    settings: Settings,
    *,
    store: Store | None = None,
    budget: int | None = None,
    summary_max_tokens: int | None = None,
    system: str | None = None,
    model: str | None = None,
    max_tokens: int | None = None,
    ledger: CostLedger | None = None,
    user_id: str = "simulation",
    session_id: str | None = None,
    cache_aware: bool = False,
    low_water: float = 0.5,
    cache_ttl: str | None = None,
    pace_seconds: float = DEFAULT_PACE_SECONDS,
    grow_to_cache: bool = True,
    pad_to_cache: bool | str = False,
) -> Strategy:
    """Bounded memory (window + running summary); an in-memory store unless `store` is given."""
    return BoundedMemory(
        client,
        settings,
        store=store or mongomock_store("simulation"),
        user_id=user_id,
        session_id=session_id,
        budget=budget,
        summary_max_tokens=summary_max_tokens,
        system=system,
        model=model,
        max_tokens=max_tokens,
        ledger=ledger,
        cache_aware=cache_aware,
        low_water=low_water,
        cache_ttl=cache_ttl,
        pace_seconds=pace_seconds,
        grow_to_cache=grow_to_cache,
        pad_to_cache=pad_to_cache,
    )


def _bounded_cached(client: anthropic.Anthropic, settings: Settings, **kw: Any) -> Strategy:
    """Cache-aware bounded memory: the window grows to a high mark, then is cut to a low mark in one fold;
    breakpoints on the system prompt (persona + summary) and the newest message. The marks and the TTL are the
    layout helpers.memory.caching chooses for the model (`pace_seconds`: the expected time between turns)."""
    return _bounded(client, settings, cache_aware=True, **kw)


def _bounded_padded(client: anthropic.Anthropic, settings: Settings, **kw: Any) -> Strategy:
    """Cache-aware bounded memory with its stable prefix padded to the model's minimum cacheable length
    (`pad_to_cache`, default True: explicit neutral filler; a string: the app's own text to pin): persona + pinned
    text carry their own breakpoint, so the request is read from the cache from turn 2 and after every fold."""
    kw.setdefault("pad_to_cache", True)
    return _bounded(client, settings, cache_aware=True, **kw)


def _vector(client: anthropic.Anthropic, settings: Settings, *, store: Store | None = None, **kw: Any) -> Strategy:
    """Vector memory (bounded + long-term retrieval); an in-memory store unless `store` is given."""
    kw.setdefault("user_id", "simulation")
    return VectorMemory(client, settings, store=store or mongomock_store("simulation"), **kw)


def _vector_cached(client: anthropic.Anthropic, settings: Settings, **kw: Any) -> Strategy:
    """Cache-aware vector memory: bounded_cached's window and breakpoints, recalled memories in the newest message."""
    return _vector(client, settings, cache_aware=True, **kw)


def _memory_tool(client: anthropic.Anthropic, settings: Settings, *, store: Store | None = None, **kw: Any) -> Strategy:
    """The model keeps its own memory: memory-tool files per user plus a window (MemoryToolMemory, issue 33); an
    in-memory store unless `store` is given. Offline it needs the offline model to speak the memory tool."""
    kw.setdefault("user_id", "simulation")
    return MemoryToolMemory(client, settings, store=store or mongomock_store("simulation"), **kw)


# The strategy table: every name the simulator, the notebooks and `python -m helpers.bench --strategy` know.
STRATEGIES: dict[str, StrategyFactory] = {
    "naive": _naive,
    "naive_cached": _naive_cached,
    "last_k": _last_k,
    "stateless": _stateless,
    "bounded": _bounded,
    "bounded_cached": _bounded_cached,
    "bounded_padded": _bounded_padded,
    "vector": _vector,
    "vector_cached": _vector_cached,
    "memory_tool": _memory_tool,
}


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
    """The strategy names in the table, sorted."""
    return sorted(STRATEGIES)


def make_strategy(name: str, client: anthropic.Anthropic, settings: Settings, **kw: Any) -> Strategy:
    """Build the registered strategy `name` (e.g. "naive", "last_k") with `kw` passed to its factory."""
    names = available_strategies()
    if name not in STRATEGIES:
        raise KeyError(
            f"unknown strategy {name!r}; registered: {', '.join(names)} "
            "(add one with helpers.sim.strategies.register_strategy)"
        )
    return STRATEGIES[name](client, settings, **kw)
