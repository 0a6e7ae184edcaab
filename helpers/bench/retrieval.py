"""The `retrieval` benchmark: cold start (with and without loading the embedding model), search latency on the default exact path and memory at N memories per user (vector, BM25, hybrid). Tools for further/04_memory_in_production, "Which retrieval wins? Measure it".

`python -m helpers.bench retrieval --memories 1000,10000,50000 --out docs/results/retrieval.json` measures every
size in one run (helpers.bench.latency) and writes the results file the scale table of docs/benchmarks.md is made from
(helpers.bench.scale_table), with its provenance: command, commit, date, mode and the machine's load.
"""

from __future__ import annotations

import argparse
import json
import sys

from helpers.bench.common import positive_int
from helpers.bench.latency import run_retrieval_benchmark
from helpers.bench.results import machine, run_provenance, write_results_file

__all__ = ["run_retrieval", "add_retrieval", "run_retrieval_benchmark", "measure_sizes", "size_list", "verdicts"]


def size_list(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated positive numbers of memories, e.g. 1000,10000,50000."""
    try:
        sizes = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive whole numbers, got {text!r}")
    return sizes


def verdicts(sizes: list[dict]) -> dict:
    """The issue's targets, checked on one run: cold start at the largest size <= 1 s; growing sublinearly from
    10,000 to 50,000 (less than 5x for 5x the memories); hybrid p95 at the largest <= 2x at the smallest, both as
    a request pays it (the question embedded) and for the search alone (the vector given: the rows' share), on the
    default exact path and, when measured, with the coarse lists. The cold start is judged with the embedding
    model loaded before (`cold_start_ms`) and, when measured, with loading it counted."""
    by = {s["memories"]: s for s in sizes}
    largest, smallest = by[max(by)], by[min(by)]
    out = {
        "cold_start_ms_at_largest": largest["cold_start_ms"],
        "cold_start_within_1_s": largest["cold_start_ms"] <= 1000.0,
        "hybrid_p95_ratio_largest_to_smallest": round(
            largest["ms"]["hybrid"]["p95"] / smallest["ms"]["hybrid"]["p95"], 2
        ),
    }
    out["hybrid_p95_within_2x"] = out["hybrid_p95_ratio_largest_to_smallest"] <= 2.0
    if largest.get("cold_start_with_model_load_ms") is not None:  # what a new process pays, the model loaded too
        out["cold_start_with_model_load_ms_at_largest"] = largest["cold_start_with_model_load_ms"]
        out["cold_start_with_model_load_within_1_s"] = largest["cold_start_with_model_load_ms"] <= 1000.0
    exact = largest["ms"]["hybrid_search_only_exact"]["p95"] / smallest["ms"]["hybrid_search_only_exact"]["p95"]
    out["search_alone_exact_p95_ratio_largest_to_smallest"] = round(exact, 2)
    out["search_alone_exact_p95_within_2x"] = exact <= 2.0
    if "hybrid_search_only" in largest["ms"]:  # --approximate: the coarse lists where the user has enough rows
        alone = largest["ms"]["hybrid_search_only"]["p95"] / smallest["ms"]["hybrid_search_only"]["p95"]
        out["search_alone_approximate_p95_ratio_largest_to_smallest"] = round(alone, 2)
        out["search_alone_approximate_p95_within_2x"] = alone <= 2.0
    if 10_000 in by and 50_000 in by:
        ratio = by[50_000]["cold_start_ms"] / by[10_000]["cold_start_ms"]
        out["cold_start_ratio_50k_to_10k"] = round(ratio, 2)
        out["cold_start_sublinear"] = ratio < 5.0
    out["identical_results"] = all(s.get("identical_results", True) for s in sizes)
    out["coarse_at_largest"] = largest.get("coarse")  # how the approximate ranking agrees with the exact one
    return out


def measure_sizes(sizes: tuple[int, ...], args: argparse.Namespace, progress=None) -> dict:
    """Every size in one run, with the run's provenance and the targets' verdicts."""
    source = run_provenance("python -m helpers.bench " + " ".join(sys.argv[1:]))
    measured = []
    for n in sizes:
        if progress:
            progress(f"{n:,} memories ...")
        measured.append(
            run_retrieval_benchmark(
                n,
                args.queries,
                k=args.k,
                distinct=args.distinct,
                compare=not args.no_compare,
                approximate=args.approximate,
                progress=progress,
            )
        )
    source["machine_at_end"] = machine()
    return {"provenance": source, "sizes": measured, "targets": verdicts(measured)}


def _table(doc: dict) -> str:
    first = doc["sizes"][0]
    lines = [
        f"# {first['store']} · {first['embedder']} · {first['queries']} queries · k={first['k']}",
        f"# load average at start {doc['provenance']['machine']['load_average']}, "
        f"at end {doc['provenance']['machine_at_end']['load_average']} ({doc['provenance']['machine']['cpus']} CPUs)",
        f"{'memories':>9} {'cold start':>11} {'+model':>8} {'every doc':>10} {'same':>5} {'hybrid p50':>11} "
        f"{'p95':>7} {'vector p95':>11} {'lexical p95':>12} {'alone p95':>10} {'RSS MB':>7} {'top-k same':>10}",
    ]
    for s in doc["sizes"]:
        every = s.get("first_search_reading_every_memory_ms")
        loaded = s.get("cold_start_with_model_load_ms")
        lines.append(
            f"{s['memories']:>9,} {s['cold_start_ms']:>9.0f}ms {loaded if loaded is not None else '-':>6}ms "
            f"{every if every is not None else '-':>8}ms "
            f"{str(s.get('identical_results', '-')):>5} {s['ms']['hybrid']['p50']:>9.1f}ms {s['ms']['hybrid']['p95']:>5.1f}ms "
            f"{s['ms']['vector']['p95']:>9.1f}ms {s['ms']['lexical']['p95']:>10.1f}ms "
            f"{s['ms']['hybrid_search_only_exact']['p95']:>8.1f}ms {s['rss_mb']:>7} "
            f"{s.get('coarse', {}).get('hybrid_top_k_identical', '-'):>10}"
        )
    lines.append("targets: " + json.dumps(doc["targets"]))
    return "\n".join(lines)


def run_retrieval(args: argparse.Namespace) -> int:
    """`retrieval`: cold start, p50/p95 per mode and RSS at each of `--memories` (helpers.bench.latency)."""
    progress = (lambda message: print(message, file=sys.stderr)) if sys.stderr.isatty() or args.progress else None
    doc = measure_sizes(args.memories, args, progress)
    if args.out:
        write_results_file(args.out, doc)
    if args.json:
        print(json.dumps(doc["sizes"][0] if len(doc["sizes"]) == 1 else doc))
        return 0
    print(_table(doc))
    violations = sum(s["isolation_violations"] for s in doc["sizes"])
    print(f"other users' memories returned: {violations}")
    return 1 if violations or not doc["targets"]["identical_results"] else 0


def add_retrieval(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "retrieval",
        help="cold start, search latency and RSS at N memories per user (vector, BM25, hybrid)",
        description="Fill a throwaway database with synthetic memories as an import would, then in a new process "
        "time the first search (the cold start) and each mode's searches, and read its memory; drop the database.",
    )
    p.add_argument(
        "--memories", type=size_list, default=(10_000,), metavar="N1,N2,...", help="memories of the measured user"
    )
    p.add_argument("--queries", type=positive_int, default=200, help="queries to time (default 200)")
    p.add_argument("--k", type=positive_int, default=5, help="hits per query (default 5)")
    p.add_argument(
        "--distinct",
        type=positive_int,
        default=400,
        help="distinct texts embedded; the rest reuse their vectors plus noise (default 400)",
    )
    p.add_argument(
        "--approximate",
        action="store_true",
        help="time the index with coarse lists above COARSE_MIN_ROWS (the search alone is also timed exact)",
    )
    p.add_argument("--no-compare", action="store_true", help="skip the first search reading every memory document")
    p.add_argument("--out", default=None, metavar="FILE", help="also write the results file (with its provenance)")
    p.add_argument("--progress", action="store_true", help="say what runs on stderr")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run_retrieval)
