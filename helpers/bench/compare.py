"""The `compare` benchmark (the capstone): every stage on one scripted conversation, recall, tokens and cost. Tools for further/06_every_stage_measured, "Every stage, one conversation, measured"."""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Iterable

from helpers.bench.common import positive_int
from helpers.bench.results import RESULTS_DIR, load_results, machine, run_provenance, write_results_file
from helpers.bench.scoring import answer_in_request
from helpers.config import Settings, load_settings
from helpers.pricing import CostLedger, cache_write_split, price_of
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import SimulationResult, simulate, simulation_client
from helpers.sim.strategies import make_strategy

__all__ = [
    "COMPARED",
    "RESULTS_FILE",
    "compare_strategies",
    "compare_results",
    "usd_by_kind",
    "run_compare",
    "add_compare",
]

RESULTS_FILE = RESULTS_DIR / "compare.json"  # what `python -m helpers.bench compare --out` writes; further/06 loads it


COMPARED = (
    ("stateless", {}),
    ("naive", {}),
    ("naive_cached", {}),
    ("last_k", {"keep_last": 6}),
    ("bounded", {"budget": 300}),
    ("bounded_cached", {"budget": 300}),
    ("vector", {"budget": 300, "memory_budget": 300}),
)


def usd_by_kind(ledger: CostLedger) -> dict[str, float]:
    """USD of every call in `ledger` by what it paid for: uncached input, cache writes (5-minute 1.25x, 1-hour 2x),
    cache reads and output (helpers.sim.plots.COST_PARTS stacks them)."""
    out = {"input": 0.0, "cache_write": 0.0, "cache_read": 0.0, "output": 0.0}
    for e in ledger.entries:
        price = price_of(e.model, ledger.prices)
        five, hour = cache_write_split(e.usage)
        out["input"] += e.input_tokens * price.input_per_mtok / 1e6
        out["cache_write"] += (five * price.cache_write_per_mtok + hour * price.cache_write_1h_per_mtok) / 1e6
        out["cache_read"] += e.cache_read_input_tokens * price.cache_read_per_mtok / 1e6
        out["output"] += e.output_tokens * price.output_per_mtok / 1e6
    return out


def compare_strategies(
    turns: int = 150,
    *,
    settings: Settings | None = None,
    strategies: Iterable[tuple[str, dict]] = COMPARED,
    progress: bool = False,
) -> dict:
    """Every stage of the series on the same recall script: tokens and USD per turn (all calls priced by a
    ledger, all four usage fields; replies padded to the simulation's REPLY_TOKENS), then the share of planted
    questions whose answer is in the request each would send."""
    settings = settings or load_settings()
    client = simulation_client(settings)
    script, questions = recall_script(turns), recall_questions()
    results, table = {}, {}
    for name, kwargs in strategies:
        strategy = make_strategy(name, client, settings, system=TRIP_PERSONA, ledger=CostLedger(), **kwargs)
        results[name] = simulate(strategy, script, name=name, progress=progress)
        recalled = 0
        for _kind, question, answer in questions:
            request = strategy.build_request(question)
            recalled += answer_in_request(request, answer)
        r = results[name]
        upkeep = sum(v["cost_usd"] for k, v in (r.cost_by_purpose or {}).items() if k != "chat")
        table[name] = {
            "recall": recalled / len(questions),
            "total_input_tokens": r.total_input_tokens,
            "cache_write_tokens": sum(r.cache_write_tokens),
            "cache_read_tokens": sum(r.cache_read_tokens),
            "total_output_tokens": r.total_output_tokens,
            "max_turn_input_tokens": r.max_turn_input_tokens,
            "cost_usd": r.total_cost_usd,
            "usd_by_kind": usd_by_kind(strategy.ledger),
            "maintenance_usd": upkeep,
            "reply_tokens": r.reply_tokens,
            "cost_by_purpose": r.cost_by_purpose,
        }
        if hasattr(strategy, "close"):
            strategy.close()
    return {"turns": turns, "questions": len(questions), "table": table, "results": results}


def _per_turn(result: SimulationResult) -> dict:
    """A run's per-turn figures as JSON (the replies' text is left out)."""
    return {f.name: getattr(result, f.name) for f in dataclasses.fields(result) if f.name != "replies"}


def compare_results() -> dict:
    """The results file `python -m helpers.bench compare --out docs/results/compare.json` wrote, shaped as
    `compare_strategies` returns it: its provenance, the table, and each stage's run as a SimulationResult (per-turn
    tokens and USD, for the plots)."""
    saved = load_results(RESULTS_FILE.stem)
    runs = {name: SimulationResult(**fields) for name, fields in saved["results"].items()}
    return {**saved, "results": runs}


def run_compare(args: argparse.Namespace) -> int:
    """`compare`: the capstone table (recall, tokens, cost) for every stage of the series; with --out, also the
    results file with every stage's per-turn figures and the run's provenance."""
    command = f"python -m helpers.bench compare --turns {args.turns}" + (f" --out {args.out}" if args.out else "")
    provenance = run_provenance(
        command,
        data="helpers.sim.scripts.recall_script and recall_questions, persona TRIP_PERSONA",
        stages={name: kwargs for name, kwargs in COMPARED},
    )
    out = compare_strategies(args.turns, progress=args.progress)
    if args.out:
        provenance["finished"] = machine()
        runs = {name: _per_turn(result) for name, result in out["results"].items()}
        write_results_file(args.out, {"provenance": provenance, **out, "results": runs})
    if args.json:
        print(json.dumps({"turns": out["turns"], "questions": out["questions"], "table": out["table"]}))
        return 0
    print(
        f"{'strategy':>14} {'recall':>7} {'input':>10} {'cache write':>11} {'cache read':>11} {'output':>8} "
        f"{'max/turn':>9} {'cost USD':>9}"
    )
    for name, row in out["table"].items():
        print(
            f"{name:>14} {row['recall']:>7.0%} {row['total_input_tokens']:>10,} {row['cache_write_tokens']:>11,} "
            f"{row['cache_read_tokens']:>11,} {row['total_output_tokens']:>8,} {row['max_turn_input_tokens']:>9,} "
            f"{row['cost_usd']:>9.4f}"
        )
    return 0


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="every stage on one scripted conversation: recall, tokens, cost")
    p.add_argument("--turns", type=positive_int, default=150)
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--out", default=None, metavar="FILE", help=f"also write the results file (further/06: {RESULTS_FILE.name})"
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    p.set_defaults(func=run_compare)
