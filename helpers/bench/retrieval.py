"""The `retrieval` benchmark: search latency at N memories per user (vector, BM25, hybrid). Tools for further/04_memory_in_production, "Which retrieval wins? Measure it"."""

from __future__ import annotations

import argparse
import json
import sys

from helpers.bench.common import positive_int
from helpers.bench.latency import run_retrieval_benchmark

__all__ = ["run_retrieval", "add_retrieval", "run_retrieval_benchmark"]


def run_retrieval(args: argparse.Namespace) -> int:
    """`retrieval`: search latency (p50/p95 ms) at `--memories` memories on the local store (helpers.bench.latency)."""
    progress = (lambda message: print(message, file=sys.stderr)) if sys.stderr.isatty() else None
    report = run_retrieval_benchmark(args.memories, args.queries, k=args.k, distinct=args.distinct, progress=progress)
    if args.json:
        print(json.dumps(report))
        return 0
    print(
        f"# {report['store']} · {report['memories']:,} memories for one user "
        f"+ {report['other_users_memories']:,} of other users · {report['queries']} queries · k={report['k']}"
    )
    print(f"# {report['note']}")
    print(f"fill {report['fill_s']} s · first search (loads the user's cache) {report['cold_load_ms']} ms")
    print(f"{'mode':>20} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for mode, row in report["ms"].items():
        print(f"{mode:>20} {row['p50']:>8.2f} {row['p95']:>8.2f} {row['max']:>8.2f}")
    verdict = "meets" if report["meets_target"] else "MISSES"
    print(
        f"hybrid p95 {report['ms']['hybrid']['p95']:.2f} ms {verdict} the {report['target_p95_ms']:.0f} ms target; "
        f"other users' memories returned: {report['isolation_violations']}"
    )
    return 0


def add_retrieval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieval",
        help="search latency at N memories per user (vector, BM25, hybrid)",
        description="Fill a throwaway database on the local store with synthetic memories, time "
        "MemoryIndex.search per query, drop the database.",
    )
    p.add_argument("--memories", type=positive_int, default=10_000, help="memories of the measured user")
    p.add_argument("--queries", type=positive_int, default=200, help="queries to time (default 200)")
    p.add_argument("--k", type=positive_int, default=5, help="hits per query (default 5)")
    p.add_argument(
        "--distinct",
        type=positive_int,
        default=400,
        help="distinct texts embedded; the rest reuse their vectors plus noise (default 400)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run_retrieval)
