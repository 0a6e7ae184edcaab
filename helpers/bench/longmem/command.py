"""The `longmem` benchmark command: recall vs raw-turn baselines on long dated conversations, per token budget. Tools for 05_vector_memory, "Which retrieval wins? Measure it"."""

from __future__ import annotations

import argparse
import json
import sys

from helpers.bench.longmem.methods import format_markdown, format_table, load_split, run_longmem

__all__ = ["run_longmem_cmd", "add_longmem"]


def _budget_list(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated positive token budgets, e.g. 1000,2000,4000."""
    try:
        budgets = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if not budgets or min(budgets) < 1:
        raise argparse.ArgumentTypeError(f"budgets must be positive whole numbers, got {text!r}")
    return budgets


def run_longmem_cmd(args: argparse.Namespace) -> int:
    """`longmem`: recall and tokens per question on long dated conversations, every method at the same budgets."""
    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else None
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.progress else None
    try:
        kwargs = {"methods": methods} if methods else {}
        result = run_longmem(load_split(args.split), args.budgets, store=args.store, progress=progress,
                             details=args.details, **kwargs)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result["split"] = args.split
    print(json.dumps(result) if args.json else format_markdown(result) if args.markdown else format_table(result))
    return 0


def add_longmem(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("longmem", help="long multi-session conversations: recall vs raw-turn baselines per budget",
                       description="Answer-in-request recall and tokens per question for the whole transcript, "
                                   "last turns, BM25/embeddings/hybrid over raw turns and the project stages, "
                                   "at the same total token budgets. Tune on --split tune, report --split report.")
    p.add_argument("--split", choices=("tune", "report", "all"), default="report",
                   help="tune: conversations 0-2 (choose parameters here); report: 3-5 (held out); default report")
    p.add_argument("--budgets", type=_budget_list, default=(1000, 2000, 4000), metavar="B1,B2,...",
                   help="total request tokens per question (default 1000,2000,4000)")
    p.add_argument("--methods", default=None, metavar="M1,M2,...",
                   help="subset of full,last_turns,bm25,embeddings,hybrid,bounded,vector (default all)")
    p.add_argument("--store", choices=("memory", "local"), default="memory",
                   help="store for the project stages: fresh in-memory stores (default) or the CLI's own store")
    p.add_argument("--details", action="store_true", help="with --json: every question's outcome per method")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--progress", action="store_true", help="say what runs on stderr")
    p.set_defaults(func=run_longmem_cmd)
