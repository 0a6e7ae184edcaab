"""Benchmarks from the terminal: `python -m helpers.bench cost --strategy naive --turns 200 [--json]`. Tools for 03_context_window_overflow, "The cost of resending everything".

One module per measurement, each with a `measure_*`/`run_*` function and an `add_*` that adds its subcommand:
cost (03), overhead and load (04), recall, retrieval and longmem (05), compare (06). Strategies come from the
table `helpers.sim.strategies.STRATEGIES` (`--strategy bounded` builds its "bounded" entry).
"""

from __future__ import annotations

from helpers.bench.cli import SUBCOMMANDS, build_parser, main
from helpers.bench.compare import COMPARED, compare_strategies
from helpers.bench.cost import run_cost
from helpers.bench.load import measure_load
from helpers.bench.overhead import measure_overhead
from helpers.bench.recall import RECALL_STRATEGIES, measure_recall
from helpers.bench.scoring import answer_in_request

__all__ = [
    "main",
    "build_parser",
    "run_cost",
    "measure_overhead",
    "measure_load",
    "measure_recall",
    "compare_strategies",
    "answer_in_request",
    "SUBCOMMANDS",
    "COMPARED",
    "RECALL_STRATEGIES",
]
