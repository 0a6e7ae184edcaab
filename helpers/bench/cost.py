"""The `cost` benchmark: tokens and USD per turn of the scripted trip through one strategy. Tools for 03_context_window_overflow, "The cost of resending everything"."""

from __future__ import annotations

import argparse
import json
import sys

from helpers.config import load_settings
from helpers.pricing import CostLedger
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import available_strategies, make_strategy, simulate, simulation_client
from helpers.bench.common import non_negative_int, positive_int

__all__ = ["run_cost", "add_cost"]


def run_cost(args: argparse.Namespace) -> int:
    """`cost`: simulate `--turns` scripted turns with `--strategy`; print a table or, with --json, one JSON object."""
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
            print(f"error: strategy {args.strategy!r} does not take --keep-last (use --strategy last_k)", file=sys.stderr)
            return 2
        raise
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    try:
        result = simulate(strategy, trip_script(args.turns), progress=progress, name=args.strategy,
                          on_overflow="stop")
    except KeyError as err:  # no price for the model
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2
    report = {**result.to_dict(), "requested_turns": args.turns, "keep_last": args.keep_last,
              "context_window": args.context_window, "script": "trip", "mode": "offline"}
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"# strategy {args.strategy} · {result.turns} turns · offline token counts priced as {result.model}")
    print(f"{'turn':>5} {'input':>8} {'output':>7} {'cost USD':>10} {'cumulative USD':>15}")
    for i, (tin, tout, cost, cum) in enumerate(zip(result.input_tokens, result.output_tokens, result.cost_usd,
                                                    result.cumulative_cost_usd()), start=1):
        print(f"{i:>5} {tin:>8,} {tout:>7,} {cost:>10.6f} {cum:>15.6f}")
    exponent = report["fitted_exponent"]
    print(f"total: input {result.total_input_tokens:,} tokens · output {result.total_output_tokens:,} tokens · "
          f"${result.total_cost_usd:.4f} · largest request {result.max_turn_input_tokens:,} tokens")
    if exponent is not None:
        print(f"cumulative input tokens grow like turn^{exponent:.2f} (fit over the second half)")
    if result.overflow_turn:
        print(f"overflow at turn {result.overflow_turn}: {result.overflow_message}")
    return 0


def add_cost(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cost", help="tokens and USD per turn of a scripted conversation",
                       description="Simulate the trip-planning script through a memory strategy on the offline model.")
    p.add_argument("--strategy", default="naive", choices=available_strategies(), help="memory strategy (registry name)")
    p.add_argument("--turns", type=positive_int, default=100, help="scripted user turns to run (default 100)")
    p.add_argument("--keep-last", type=non_negative_int, default=None, metavar="K",
                   help="messages kept by --strategy last_k (default %(default)s → 6)")
    p.add_argument("--context-window", type=positive_int, default=None, metavar="TOKENS",
                   help="offline context window; the run stops at the first overflow (default: never overflows)")
    p.add_argument("--model", default=None, help="model whose prices apply (default: CHAT_MODEL)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run_cost)
