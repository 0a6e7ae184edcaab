"""The `cost` benchmark: every strategy side by side (cost_table.py), or one strategy turn by turn. Tools for 03_context_window_overflow, "The cost of resending everything"."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from helpers.bench.common import non_negative_int, positive_int
from helpers.bench.cost_floor import cost_floor
from helpers.bench.cost_pace import PACE_TURNS, pace_and_ttl, pace_key, pace_tasks
from helpers.bench.cost_report import markdown_table, provenance
from helpers.bench.cost_table import (
    CHECKPOINTS,
    EXTRA_ROWS,
    KINDS,
    MAINTENANCE_MODEL,
    MODELS,
    RESULTS_FILE,
    ROWS,
    THEIRS,
    cost_table,
    run_tasks,
    table_tasks,
)
from helpers.config import load_settings
from helpers.pricing import CostLedger
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import REPLY_TOKENS, SECONDS_PER_TURN, simulate, simulation_client
from helpers.sim.strategies import available_strategies, make_strategy

__all__ = ["run_cost", "add_cost"]


def run_cost(args: argparse.Namespace) -> int:
    """`cost`: without --strategy, every strategy side by side at the checkpoints; with it, one strategy per turn."""
    if args.strategy is None:
        return _run_table(args)
    settings = load_settings()
    if args.model:
        settings = settings.with_(chat_model=args.model)
    client = simulation_client(settings, context_window=args.context_window)
    kwargs: dict = {"system": TRIP_PERSONA, "ledger": CostLedger()}  # the ledger also prices summary/extraction calls
    if args.keep_last is not None:
        kwargs["keep_last"] = args.keep_last
    try:
        strategy = make_strategy(args.strategy, client, settings, **kwargs)
    except TypeError as err:
        if "keep_last" in str(err):
            print(
                f"error: strategy {args.strategy!r} does not take --keep-last (use --strategy last_k)", file=sys.stderr
            )
            return 2
        raise
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        result = simulate(strategy, trip_script(args.turns), progress=progress, name=args.strategy, on_overflow="stop")
    except KeyError as err:  # no price for the model
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    report = {
        **result.to_dict(),
        "requested_turns": args.turns,
        "keep_last": args.keep_last,
        "context_window": args.context_window,
        "script": "trip",
        "mode": "offline",
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"# strategy {args.strategy} · {result.turns} turns · replies padded to {result.reply_tokens} tokens · "
        f"local BPE (offline count) priced as {result.model}"
    )
    print(f"{'turn':>5} {'input':>8} {'output':>7} {'cost USD':>10} {'cumulative USD':>15}")
    for i, (tin, tout, cost, cum) in enumerate(
        zip(result.input_tokens, result.output_tokens, result.cost_usd, result.cumulative_cost_usd()), start=1
    ):
        print(f"{i:>5} {tin:>8,} {tout:>7,} {cost:>10.6f} {cum:>15.6f}")
    exponent = report["fitted_exponent"]
    print(
        f"total: input {result.total_input_tokens:,} tokens · output {result.total_output_tokens:,} tokens · "
        f"${result.total_cost_usd:.4f} · largest request {result.max_turn_input_tokens:,} tokens"
    )
    if exponent is not None:
        print(f"cumulative input tokens grow like turn^{exponent:.2f} (fit over the second half)")
    if result.overflow_turn:
        print(f"overflow at turn {result.overflow_turn}: {result.overflow_message}")
    return 0


def _run_table(args: argparse.Namespace) -> int:
    """Every strategy at every checkpoint (helpers.bench.cost_table) and the pace and TTL sweep (cost_pace.py), all
    runs in one pool; --out writes the results file and its Markdown table."""
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    if args.only is None:
        rows = list(ROWS)
    else:  # EXTRA_ROWS (the padded layout) only when named
        rows = [row for row in ROWS + EXTRA_ROWS if row[1] in args.only]
    settings, checkpoints = load_settings(), sorted(set(args.checkpoints))
    names = {name for _label, name, _options, _caches in rows}
    sweep = min(args.pace_turns, checkpoints[-1]) if {"naive", "naive_cached", "bounded_cached"} <= names else 0
    upkeep = None if args.maintenance_model == "chat" else args.maintenance_model
    tasks = table_tasks(checkpoints, list(MODELS), rows, settings, progress and args.jobs == 1, upkeep)
    if sweep:
        tasks = {**pace_tasks(list(MODELS), settings, sweep, upkeep), **tasks}  # the main table's case: its own runs
    started, load = (time.perf_counter(), os.times()), os.getloadavg()
    runs = run_tasks(tasks, args.jobs)
    ended = os.times()
    report = {"provenance": provenance(), **cost_table(checkpoints, models=list(MODELS), rows=rows, runs=runs)}
    report["provenance"]["maintenance_model"] = upkeep  # None: each row's chat model
    report["provenance"]["run"] = {  # what the run took, on this machine, under this load
        "wall_seconds": round(time.perf_counter() - started[0]),
        "cpu_seconds": round(sum(ended[:4]) - sum(started[1][:4])),  # this process and its workers
        "jobs": args.jobs,
        "load_average_at_start": [round(x, 2) for x in load],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    if "naive_cached" in names and "bounded_cached" in names:  # the floor of the comparison, per checkpoint
        for model in MODELS:
            naive = runs[pace_key("naive_cached", model, SECONDS_PER_TURN, "5m")]
            report["comparison"][model]["floor_at"] = {str(t): cost_floor(naive, model, t) for t in checkpoints}
    if sweep:
        report["pace_and_ttl"] = pace_and_ttl(runs, report, sweep)
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        path.with_suffix(".md").write_text(markdown_table(report), encoding="utf-8")
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"# replies padded to {REPLY_TOKENS} tokens · local BPE (offline count) · USD per model's price table")
    for model in report["models"]:
        for turns in report["checkpoints"]:
            print(f"\n{model}, {turns} turns")
            print(
                f"{'strategy':<22}" + "".join(f"{k:>12}" for k in KINDS) + f"{'USD':>10}{'upkeep USD':>12}{'recall':>8}"
            )
            for label, row in report["strategies"].items():
                cell = row["by_model"][model][str(turns)]
                recall = f"{cell['recall']:.0%}" if cell.get("recall") is not None else "-"
                print(
                    f"{label:<22}"
                    + "".join(f"{cell['total'][k]:>12,}" for k in KINDS)
                    + f"{cell['total']['usd']:>10.4f}{cell['maintenance']['usd']:>12.4f}{recall:>8}"
                )
        for label, row in report["strategies"].items():
            lay = row.get("layout", {}).get(model)
            if lay:
                print(
                    f"{label} layout: folds past {lay['high']:,} down to {lay['low']:,} tokens, "
                    f"{'breakpoints (' + lay['ttl'] + ')' if lay['breakpoints'] else 'no breakpoints'}, "
                    f"minimum cacheable {lay['minimum']:,}"
                )
    for model, found in report["comparison"].items():
        if isinstance(found, dict):
            times = ", ".join(f"{x:.2f}x at {t}" for t, x in found["times_cheaper_at"].items())
            print(
                f"{model}: cache-aware bounded ${found['bounded_cache_aware_usd']:.4f} vs naive + caching "
                f"${found['naive_caching_usd']:.4f} at {report['comparison']['at_turns']} turns; cheaper {times}; "
                f"crossover at turn {found['crossover_turn']}"
            )
            padded = found.get("padded")
            if padded:
                print(
                    f"  padded to the minimum: ${padded['usd']:.4f} at {report['comparison']['at_turns']} turns; cheaper "
                    + ", ".join(
                        f"{x:.2f}x at {t} (recall {padded['recall_at'][t]:.0%} vs {found['recall_at'][t][THEIRS]:.0%})"
                        for t, x in padded["times_cheaper_at"].items()
                    )
                )
            for t, floor in found.get("floor_at", {}).items():
                print(f"  floor at {t}: ${floor['floor_usd']:.4f}, at most {floor['max_times_cheaper']:.2f}x cheaper")
    for model, cases in report.get("pace_and_ttl", {}).get("by_model", {}).items():
        for case in cases:
            print(
                f"{model} at {case['seconds_per_turn']:g} s/turn, TTL {case['ttl']}: naive + caching "
                f"${case['naive_caching_usd']:.4f} (no caching ${case['naive_usd']:.4f}), cache-aware bounded "
                f"${case['bounded_cache_aware_usd']:.4f}: {case['times_cheaper']:.2f}x, crossover turn "
                f"{case['crossover_turn']}"
            )
    return 0


def _checkpoints(text: str) -> list[int]:
    try:
        values = [positive_int(v) for v in text.split(",") if v.strip()]
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"checkpoints: {err}") from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one turn count, e.g. 50,200,1000")
    return values


def add_cost(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "cost",
        help="tokens and USD of every strategy side by side, or of one per turn",
        description="Simulate the trip-planning script through the memory strategies on the offline "
        f"model (replies padded to {REPLY_TOKENS} tokens).",
    )
    p.add_argument(
        "--strategy",
        default=None,
        choices=available_strategies(),
        help="one memory strategy, turn by turn (default: every strategy side by side)",
    )
    p.add_argument(
        "--checkpoints",
        type=_checkpoints,
        default=list(CHECKPOINTS),
        metavar="N,N,...",
        help="side by side: the turn counts reported (default %(default)s)",
    )
    p.add_argument(
        "--only",
        type=lambda text: text.split(","),
        default=None,
        metavar="NAME,NAME,...",
        help="side by side: only these strategies (registry names; default every row of the table; bounded_padded, the "
        "stable prefix padded to the cache minimum, runs only when named)",
    )
    p.add_argument(
        "--pace-turns",
        type=non_negative_int,
        default=PACE_TURNS,
        metavar="N",
        help="side by side: the pace and TTL sweep's turns (default %(default)s; 0: no sweep; at most the last "
        "checkpoint)",
    )
    p.add_argument(
        "--maintenance-model",
        default=MAINTENANCE_MODEL,
        metavar="MODEL",
        help="side by side: the model of the summary and extraction calls, whichever model chats (default "
        "%(default)s, the family's cheapest; 'chat': the chat model itself)",
    )
    p.add_argument(
        "--jobs",
        type=positive_int,
        default=1,
        metavar="N",
        help="side by side: run the simulations in N processes (default 1; the figures do not change)",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="PATH",
        help=f"side by side: also write the report with its provenance, as JSON and as Markdown beside it (e.g. {RESULTS_FILE.relative_to(RESULTS_FILE.parents[2])})",
    )
    p.add_argument("--turns", type=positive_int, default=100, help="scripted user turns to run (default 100)")
    p.add_argument(
        "--keep-last",
        type=non_negative_int,
        default=None,
        metavar="K",
        help="messages kept by --strategy last_k (default %(default)s → 6)",
    )
    p.add_argument(
        "--context-window",
        type=positive_int,
        default=None,
        metavar="TOKENS",
        help="offline context window; the run stops at the first overflow (default: never overflows)",
    )
    p.add_argument("--model", default=None, help="model whose prices apply (default: CHAT_MODEL)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    p.set_defaults(func=run_cost)
