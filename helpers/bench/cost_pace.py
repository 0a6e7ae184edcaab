"""Tools: the `cost` benchmark's sweep: how the pace of a chat and the cache's TTL move the crossover of cache-aware bounded memory and naive history with caching.

A cache entry lives 5 minutes (written at 1.25x the input price) or 1 hour (written at 2x), refreshed by each
read. At 30 s between turns both live from one turn to the next; at 6 minutes a 5-minute entry is dead before the
next turn reads it, so every turn writes its prefix again and caching costs more than none. For each model, each
pace in PACES and each TTL in TTLS, the simulator (helpers.sim.simulate, on helpers.offline.SimClock) runs naive
history with caching and cache-aware bounded memory (its layout told the pace and the TTL) for PACE_TURNS turns,
and `pace_and_ttl` reports their USD, cache reads, how many times cheaper the bounded one is, and the crossover
turn. PACE_TURNS is enough for the crossover at every case measured; the checkpoints beyond it are the main
table's. The case of the main table (SECONDS_PER_TURN, "5m") reuses its runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from helpers.bench.cost_table import MAINTENANCE_MODEL, WINDOW_BUDGET, crossover_turn, cumulative_usd
from helpers.config import Settings, load_settings
from helpers.sim.simulate import SECONDS_PER_TURN

__all__ = ["PACES", "TTLS", "PACE_TURNS", "PACED", "pace_key", "pace_tasks", "pace_and_ttl", "print_pace"]

PACES = (SECONDS_PER_TURN, 360.0)  # seconds between turns: a brisk chat, and one slower than the 5-minute TTL
TTLS = ("5m", "1h")
PACE_TURNS = 200
# (label in the report, registry name, options): the two strategies whose crossover the sweep follows
PACED = (
    ("naive_caching", "naive_cached", {}),
    ("bounded_cache_aware", "bounded_cached", {"budget": WINDOW_BUDGET}),
)


def pace_key(name: str, model: str, seconds_per_turn: float, ttl: str) -> tuple:
    """The key of one sweep run; the main table's runs are keyed with ttl None (naive + caching: "5m")."""
    main = float(seconds_per_turn) == float(SECONDS_PER_TURN) and ttl == "5m"
    return (name, model, float(seconds_per_turn), None if main else ttl)


def pace_tasks(
    models: Iterable[str],
    settings: Settings | None = None,
    turns: int = PACE_TURNS,
    maintenance_model: str | None = MAINTENANCE_MODEL,
) -> dict[tuple, dict]:
    """The sweep's runs (cost_table.run_strategy's keyword arguments) by key, but for the main table's case."""
    settings = settings or load_settings()
    return {
        pace_key(name, model, pace, ttl): {
            "name": name,
            "options": {**options, "cache_ttl": ttl},
            "settings": settings,
            "turns": turns,
            "model": model,
            "seconds_per_turn": pace,
            "maintenance_model": maintenance_model,
        }
        for model in models
        for pace in PACES
        for ttl in TTLS
        for _label, name, options in PACED
        if pace_key(name, model, pace, ttl)[3] is not None
    }


def pace_and_ttl(runs: dict[tuple, dict], report: dict, turns: int = PACE_TURNS) -> dict:
    """Per model, one entry per (pace, TTL): USD of both strategies at `turns`, naive history without caching for
    reference (the main table's: no cache, no clock), cache reads, times cheaper and the crossover turn."""
    out: dict = {
        "turns": turns,
        "compares": "bounded (cache-aware) against naive + caching",
        "window_budget": WINDOW_BUDGET,
        "by_model": {},
    }
    for model in report["models"]:
        naive = report["cumulative_usd"]["naive"][model]
        cases = []
        for pace in PACES:
            for ttl in TTLS:
                found = {"seconds_per_turn": pace, "ttl": ttl}
                cumulative = {}
                for label, name, _options in PACED:
                    run = runs[pace_key(name, model, pace, ttl)]
                    chats = [e for e in run["entries"][: run["marks"][turns - 1]] if e.purpose == "chat"]
                    cumulative[label] = cumulative_usd(run, model, turns)
                    found[f"{label}_usd"] = cumulative[label][-1]
                    found[f"{label}_cache_read_tokens"] = sum(e.cache_read_input_tokens for e in chats)
                    found[f"{label}_cache_write_tokens"] = sum(e.cache_creation_input_tokens for e in chats)
                    if run["layout"] is not None:
                        found["layout"] = run["layout"]
                ours, theirs = cumulative["bounded_cache_aware"], cumulative["naive_caching"]
                found.update(
                    {
                        "naive_usd": naive[turns - 1],
                        "caching_pays_for_naive": theirs[-1] < naive[turns - 1],
                        "times_cheaper": theirs[-1] / ours[-1],
                        "crossover_turn": crossover_turn(ours, theirs),
                    }
                )
                cases.append(found)
        out["by_model"][model] = cases
    return out


def print_pace(report: dict, *, naive_only: bool = False) -> None:
    """The pace and TTL sweep of a results file, one table per model: naive history without and with caching
    and (unless `naive_only`) cache-aware bounded memory, USD at the sweep's turns, cache reads, how many times
    cheaper the bounded one is and the crossover turn (the turn from which it stays cheaper; "-": none)."""
    sweep = report["pace_and_ttl"]
    for model, cases in sweep["by_model"].items():
        print(f"{model}, {sweep['turns']:,} turns")
        head = f"  {'s/turn':>6} {'TTL':>4} {'naive':>8} {'+ caching':>10} {'its reads':>11}"
        print(head + ("" if naive_only else f" {'bounded':>8} {'its reads':>11} {'x cheaper':>9} {'crossover':>9}"))
        for case in cases:
            line = (
                f"  {case['seconds_per_turn']:>6g} {case['ttl']:>4} {case['naive_usd']:>8.3f} "
                f"{case['naive_caching_usd']:>10.3f} {case['naive_caching_cache_read_tokens']:>11,}"
            )
            if not naive_only:
                crossover = case["crossover_turn"] if case["crossover_turn"] is not None else "-"
                line += (
                    f" {case['bounded_cache_aware_usd']:>8.3f} {case['bounded_cache_aware_cache_read_tokens']:>11,}"
                    f" {case['times_cheaper']:>9.2f} {crossover:>9}"
                )
            print(line)
