"""Benchmarks from the terminal: `python -m helpers.bench cost --strategy naive --turns 200 [--json]`. Taught in 03_context_window_overflow.

One subcommand per measurement. `cost` runs the trip script through a memory strategy on the offline
model and reports tokens and USD per turn. Strategies come from `helpers.cost.STRATEGIES`, so a stage
that registers itself (`register_strategy("bounded", ...)`) is available here as `--strategy bounded`.
Later subcommands (overhead, recall, retrieval, load) add a `_add_<name>` function to `SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable

from . import memory as _memory  # noqa: F401  (imported so its strategies register themselves)
from .config import load_settings
from .cost import CostLedger, available_strategies, make_strategy, simulate, simulation_client
from .scoring import answer_in_request, mentions
from .scripts import TRIP_PERSONA, trip_script

__all__ = ["main", "build_parser", "run_cost", "measure_overhead", "measure_load", "answer_in_request", "SUBCOMMANDS"]


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than `minimum`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


_positive_int = _int_at_least(1)
_non_negative_int = _int_at_least(0)


def _print_figures(figures: dict, as_json: bool) -> None:
    """One JSON object, or one right-aligned `key: value` line per figure."""
    if as_json:
        print(json.dumps(figures))
        return
    width = max(map(len, figures), default=0)
    for key, value in figures.items():
        print(f"{key:>{width}}: {value}")


# ---------------------------------------------------------------------------- cost

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


def _add_cost(sub) -> None:
    p = sub.add_parser("cost", help="tokens and USD per turn of a scripted conversation",
                       description="Simulate the trip-planning script through a memory strategy on the offline model.")
    p.add_argument("--strategy", default="naive", choices=available_strategies(), help="memory strategy (registry name)")
    p.add_argument("--turns", type=_positive_int, default=100, help="scripted user turns to run (default 100)")
    p.add_argument("--keep-last", type=_non_negative_int, default=None, metavar="K",
                   help="messages kept by --strategy last_k (default %(default)s → 6)")
    p.add_argument("--context-window", type=_positive_int, default=None, metavar="TOKENS",
                   help="offline context window; the run stops at the first overflow (default: never overflows)")
    p.add_argument("--model", default=None, help="model whose prices apply (default: CHAT_MODEL)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=run_cost)


# ---------------------------------------------------------------------------- overhead

def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def measure_overhead(turns: int = 100, budget: int = 300, settings=None) -> dict:
    """Memory-layer time per bounded turn with every model call excluded, and DB round trips per turn,
    on the local store (a throwaway database, dropped afterwards)."""
    import time
    import uuid

    import pymongo
    from pymongo import monitoring

    from .llm import offline_transport
    from .memory import BoundedMemory
    from .store import Store, ensure_local_server

    settings = settings or load_settings()

    class Commands(monitoring.CommandListener):
        def __init__(self):
            self.count = 0

        def started(self, event):
            self.count += 1

        def succeeded(self, event):
            pass

        def failed(self, event):
            pass

    commands = Commands()
    uri = ensure_local_server(settings.data_dir)
    mongo = pymongo.MongoClient(uri, event_listeners=[commands], tz_aware=True, journal=True)  # as open_store
    db_name = f"bench_overhead_{uuid.uuid4().hex[:8]}"
    store = Store(client=mongo, db=mongo[db_name], kind="local", uri=uri, data_dir=settings.data_dir)
    store.ensure_indexes()
    client = simulation_client(settings)
    transport = offline_transport(client)
    model_time = {"s": 0.0, "calls": 0}
    serve = transport.handle_request

    def timed(request):
        t0 = time.perf_counter()
        try:
            return serve(request)
        finally:
            model_time["s"] += time.perf_counter() - t0
            model_time["calls"] += 1

    transport.handle_request = timed
    memory = BoundedMemory(client, settings, store=store, user_id="bench", session_id=uuid.uuid4().hex,
                           budget=budget, system=TRIP_PERSONA)
    per_turn_ms, trips, calls = [], [], []
    try:
        for text in trip_script(turns):
            commands.count, model_time["s"], model_time["calls"] = 0, 0.0, 0
            t0 = time.perf_counter()
            memory.turn(text)
            total = time.perf_counter() - t0
            per_turn_ms.append((total - model_time["s"]) * 1000)
            trips.append(commands.count)
            calls.append(model_time["calls"])
    finally:
        mongo.drop_database(db_name)
        mongo.close()
    steady = slice(len(per_turn_ms) // 2, None)
    return {
        "turns": turns, "budget": budget, "store": "local SecantusDB",
        "memory_ms_p50": round(_percentile(per_turn_ms, 50), 3),
        "memory_ms_p95": round(_percentile(per_turn_ms, 95), 3),
        "memory_ms_p50_steady": round(_percentile(per_turn_ms[steady], 50), 3),
        "db_round_trips_per_turn_mean": round(sum(trips) / len(trips), 2),
        "db_round_trips_per_turn_steady_max": max(trips[steady]),
        "model_calls_per_turn_steady_mean": round(sum(calls[steady]) / len(calls[steady]), 2),
        "count_tokens_calls_total": memory.stats["count_calls"],
        "version_conflicts": memory.stats["conflicts"],
    }


def run_overhead(args: argparse.Namespace) -> int:
    """`overhead`: memory-layer ms per turn (model calls excluded) and DB round trips per turn."""
    _print_figures(measure_overhead(args.turns, args.budget), args.json)
    return 0


def _add_overhead(sub) -> None:
    p = sub.add_parser("overhead", help="memory-layer time and DB round trips per bounded turn",
                       description="Bounded memory on the local store; every model call's time is excluded.")
    p.add_argument("--turns", type=_positive_int, default=100)
    p.add_argument("--budget", type=_positive_int, default=300, help="window budget in tokens")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_overhead)


# ---------------------------------------------------------------------------- retrieval

def run_retrieval(args: argparse.Namespace) -> int:
    """`retrieval`: search latency (p50/p95 ms) at `--memories` memories on the local store (helpers.retrieval_bench)."""
    from .retrieval_bench import run_retrieval_benchmark

    progress = (lambda message: print(message, file=sys.stderr)) if sys.stderr.isatty() else None
    report = run_retrieval_benchmark(args.memories, args.queries, k=args.k, distinct=args.distinct,
                                     progress=progress)
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"# {report['store']} · {report['memories']:,} memories for one user "
          f"+ {report['other_users_memories']:,} of other users · {report['queries']} queries · k={report['k']}")
    print(f"# {report['note']}")
    print(f"fill {report['fill_s']} s · first search (loads the user's cache) {report['cold_load_ms']} ms")
    print(f"{'mode':>20} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for mode, row in report["ms"].items():
        print(f"{mode:>20} {row['p50']:>8.2f} {row['p95']:>8.2f} {row['max']:>8.2f}")
    verdict = "meets" if report["meets_target"] else "MISSES"
    print(f"hybrid p95 {report['ms']['hybrid']['p95']:.2f} ms {verdict} the {report['target_p95_ms']:.0f} ms target; "
          f"other users' memories returned: {report['isolation_violations']}")
    return 0


def _add_retrieval(sub) -> None:
    p = sub.add_parser("retrieval", help="search latency at N memories per user (vector, BM25, hybrid)",
                       description="Fill a throwaway database on the local store with synthetic memories, time "
                                   "MemoryIndex.search per query, drop the database.")
    p.add_argument("--memories", type=_positive_int, default=10_000, help="memories of the measured user")
    p.add_argument("--queries", type=_positive_int, default=200, help="queries to time (default 200)")
    p.add_argument("--k", type=_positive_int, default=5, help="hits per query (default 5)")
    p.add_argument("--distinct", type=_positive_int, default=400,
                   help="distinct texts embedded; the rest reuse their vectors plus noise (default 400)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run_retrieval)


# ---------------------------------------------------------------------------- load

def measure_load(sessions: int = 50, turns: int = 20, workers: int = 8, budget: int = 300, settings=None) -> dict:
    """Many bounded-memory sessions at once: threads, one BoundedMemory per session, one shared Store, the offline
    model. Reports throughput, memory-layer ms per turn (model time excluded), errors, version conflicts, and
    checks every session against its logs (helpers.consistency). A throwaway database, dropped afterwards."""
    import threading
    import time
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    from .consistency import check_consistency
    from .llm import offline_transport
    from .memory import BoundedMemory
    from .store import open_store

    settings = settings or load_settings()
    db_name = f"bench_load_{uuid.uuid4().hex[:8]}"
    store = open_store(settings.with_(db_name=db_name), fallback=False)
    clock = threading.local()  # model seconds spent by this thread's current turn

    def offline_client():
        client = simulation_client(settings)
        transport = offline_transport(client)
        serve = transport.handle_request

        def timed(request):
            t0 = time.perf_counter()
            try:
                return serve(request)
            finally:
                clock.model_s = getattr(clock, "model_s", 0.0) + time.perf_counter() - t0

        transport.handle_request = timed
        return client

    script = trip_script(turns)
    ids = [(f"load-user-{i}", uuid.uuid4().hex) for i in range(sessions)]
    memory_ms: list[float] = []
    turn_ms: list[float] = []
    errors: list[str] = []
    conflicts = [0]
    lock = threading.Lock()

    def run_session(user_id: str, session_id: str) -> None:
        memory = BoundedMemory(offline_client(), settings, store=store, user_id=user_id, session_id=session_id,
                               budget=budget, system=TRIP_PERSONA)
        for text in script:
            clock.model_s = 0.0
            t0 = time.perf_counter()
            try:
                memory.turn(text)
            except Exception as err:  # counted and reported, never raised: the run goes on
                with lock:
                    errors.append(f"{user_id}: {err.__class__.__name__}: {err}"[:300])
                continue
            total = time.perf_counter() - t0
            with lock:
                turn_ms.append(total * 1000)
                memory_ms.append((total - clock.model_s) * 1000)
        with lock:
            conflicts[0] += memory.stats["conflicts"]

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(run_session, u, s) for u, s in ids]:
                future.result()
        wall_s = time.perf_counter() - started
        problems = {f"{u}/{s}": p for u, s in ids if (p := check_consistency(store, u, s, budget=budget))}
        described = store.describe().removeprefix("store: ")
    finally:
        store.client.drop_database(db_name)
        store.close()
    done = len(turn_ms)
    return {
        "sessions": sessions, "turns_per_session": turns, "workers": workers, "budget": budget, "store": described,
        "turns": done, "wall_s": round(wall_s, 2), "turns_per_s": round(done / wall_s, 1) if wall_s else None,
        "memory_ms_p50": round(_percentile(memory_ms, 50), 2), "memory_ms_p95": round(_percentile(memory_ms, 95), 2),
        "turn_ms_p50": round(_percentile(turn_ms, 50), 2), "turn_ms_p95": round(_percentile(turn_ms, 95), 2),
        "errors": len(errors), "error_samples": errors[:3], "conflicts": conflicts[0],
        "inconsistent_sessions": len(problems), "problem_samples": dict(list(problems.items())[:3]),
    }


def run_load(args: argparse.Namespace) -> int:
    """`load`: many concurrent sessions; exit 1 if any turn failed or any session is inconsistent with its logs."""
    figures = measure_load(args.sessions, args.turns, args.workers, args.budget)
    _print_figures(figures, args.json)
    return 1 if figures["errors"] or figures["inconsistent_sessions"] else 0


def _add_load(sub) -> None:
    p = sub.add_parser("load", help="many concurrent bounded sessions: turns/s, memory-layer p50/p95, errors",
                       description="Threads run many sessions at once on one shared store and the offline model; "
                                   "model time is excluded from the latency; every session is checked afterwards.")
    p.add_argument("--sessions", type=_positive_int, default=50, help="sessions to run (default 50)")
    p.add_argument("--turns", type=_positive_int, default=20, help="turns per session (default 20)")
    p.add_argument("--workers", type=_positive_int, default=8, help="threads running sessions at once (default 8)")
    p.add_argument("--budget", type=_positive_int, default=300, help="window budget in tokens (default 300)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run_load)


# ---------------------------------------------------------------------------- recall

RECALL_STRATEGIES = ("naive", "last_k", "bounded", "facts_only", "episodic_only", "vector_only", "lexical_only",
                     "hybrid", "bounded_vector", "bounded_hybrid")


def measure_recall(turns: int = 150, *, budget: int = 300, summary_max_tokens: int = 120, memory_budget: int = 300,
                   keep_last: int = 6, settings=None, progress: bool = False) -> dict:
    """Recall benchmark: run the recall script once per memory design, then ask every planted question.

    A question counts as recalled when its answer is in the request the strategy would send (system +
    messages); memory tokens = that request's input tokens minus the same persona + question alone.
    Retrieval-only rows (facts/episodic/vector/lexical/hybrid) send persona + retrieved block + question.
    """
    from .memory import BoundedMemory, HistoryMemory, VectorMemory
    from .scripts import recall_questions, recall_script
    from .store import mongomock_store
    from .retrieval import format_memories, pack

    settings = settings or load_settings()
    client = simulation_client(settings)
    script = recall_script(turns)
    questions = recall_questions()
    common = {"system": TRIP_PERSONA}
    store = mongomock_store("recall")
    runs = {
        "naive": HistoryMemory(client, settings, **common),
        "last_k": HistoryMemory(client, settings, keep_last=keep_last, **common),
        "bounded": BoundedMemory(client, settings, store=store, user_id="bounded", session_id="recall", budget=budget,
                                 summary_max_tokens=summary_max_tokens, **common),
        "bounded_hybrid": VectorMemory(client, settings, store=store, user_id="vector", session_id="recall",
                                       budget=budget, summary_max_tokens=summary_max_tokens,
                                       memory_budget=memory_budget, **common),
        "bounded_vector": VectorMemory(client, settings, store=store, user_id="vector-only", session_id="recall",
                                       budget=budget, summary_max_tokens=summary_max_tokens,
                                       memory_budget=memory_budget, mode="vector", **common),
    }
    from tqdm import tqdm  # text bar: a widget bar saved in a notebook shows "model not found" after a reload

    for name, strategy in runs.items():
        for text in tqdm(script, desc=name, disable=not progress, leave=False):
            strategy.turn(text)
    vector = runs["bounded_hybrid"]

    ranks: dict[str, dict[str, int | None]] = {}

    def retrieval_only(kinds, mode, name):
        def build(question):
            ranked = vector.index.search("vector", question, k=20, kinds=kinds, mode=mode)
            answer = next(a for _k, q, a in questions if q == question)
            found = [i for i, h in enumerate(ranked, 1) if mentions(h.text, answer)]
            ranks.setdefault(name, {})[question] = found[0] if found else None
            hits = vector.index.search("vector", question, k=8, kinds=kinds, mode=mode)
            block = format_memories(pack(hits, memory_budget))
            return {"system": TRIP_PERSONA + ("\n\n" + block if block else ""),
                    "messages": [{"role": "user", "content": question}]}
        return build

    builders = {name: runs[name].build_request for name in ("naive", "last_k", "bounded", "bounded_vector",
                                                            "bounded_hybrid")}
    builders.update({
        "facts_only": retrieval_only(("fact",), "hybrid", "facts_only"),
        "episodic_only": retrieval_only(("episode",), "hybrid", "episodic_only"),
        "vector_only": retrieval_only(("fact", "episode"), "vector", "vector_only"),
        "lexical_only": retrieval_only(("fact", "episode"), "lexical", "lexical_only"),
        "hybrid": retrieval_only(("fact", "episode"), "hybrid", "hybrid"),
    })

    def tokens(request):
        kwargs = {"system": request["system"]} if request.get("system") else {}
        return client.messages.count_tokens(model=settings.chat_model, messages=request["messages"],
                                            **kwargs).input_tokens

    rows = {}
    for name in RECALL_STRATEGIES:
        hits, memory_tokens, per_question = 0, [], []
        for kind, question, answer in questions:
            request = builders[name](question)
            ok = answer_in_request(request, answer)
            bare = tokens({"system": TRIP_PERSONA, "messages": [{"role": "user", "content": question}]})
            extra = tokens(request) - bare
            hits += ok
            memory_tokens.append(extra)
            per_question.append({"kind": kind, "question": question, "recalled": ok, "memory_tokens": extra})
        by_kind = {k: sum(q["recalled"] for q in per_question if q["kind"] == k) /
                   max(1, sum(q["kind"] == k for q in per_question)) for k in ("fact", "detail", "paraphrase", "exact")}
        rr = [1 / r if r else 0.0 for r in ranks.get(name, {}).values()]
        rows[name] = {"recall": hits / len(questions), "recall_facts": by_kind["fact"],
                      "mrr": round(sum(rr) / len(rr), 3) if rr else None,
                      "recall_details": by_kind["detail"], "recall_paraphrases": by_kind["paraphrase"],
                      "recall_exact": by_kind["exact"],
                      "memory_tokens_per_question": round(sum(memory_tokens) / len(memory_tokens), 1),
                      "questions": per_question}
    return {"turns": turns, "budget": budget, "summary_max_tokens": summary_max_tokens,
            "memory_budget": memory_budget, "keep_last": keep_last, "questions": len(questions), "strategies": rows}


def run_recall(args: argparse.Namespace) -> int:
    """`recall`: recall of planted facts and details, and memory tokens per question, per strategy."""
    result = measure_recall(args.turns, budget=args.budget, summary_max_tokens=args.summary_max_tokens,
                            memory_budget=args.memory_budget, progress=args.progress)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"recall after {result['turns']} turns ({result['questions']} planted questions; window {args.budget}, "
          f"summary cap {args.summary_max_tokens}, memory budget {args.memory_budget} tokens)")
    print(f"{'strategy':>16} {'recall':>7} {'facts':>6} {'details':>8} {'reworded':>9} {'exact':>6} {'memory tokens/question':>23} "
          f"{'MRR':>6}")
    for name, row in result["strategies"].items():
        mrr = f"{row['mrr']:.3f}" if row["mrr"] is not None else "-"
        print(f"{name:>16} {row['recall']:>7.0%} {row['recall_facts']:>6.0%} {row['recall_details']:>8.0%} "
              f"{row['recall_paraphrases']:>9.0%} {row['recall_exact']:>6.0%} {row['memory_tokens_per_question']:>23,.0f} "
              f"{mrr:>6}")
    return 0


def _add_recall(sub) -> None:
    p = sub.add_parser("recall", help="recall of planted facts/details per memory strategy",
                       description="Run the recall script through every memory design and ask the planted questions.")
    p.add_argument("--turns", type=_positive_int, default=150)
    p.add_argument("--budget", type=_positive_int, default=300, help="window budget in tokens")
    p.add_argument("--summary-max-tokens", type=_positive_int, default=120)
    p.add_argument("--memory-budget", type=_positive_int, default=300)
    p.add_argument("--json", action="store_true")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    p.set_defaults(func=run_recall)


# ---------------------------------------------------------------------------- compare (the capstone)

COMPARED = (("stateless", {}), ("naive", {}), ("last_k", {"keep_last": 6}), ("bounded", {"budget": 300}),
            ("vector", {"budget": 300, "memory_budget": 300}))


def compare_strategies(turns: int = 150, *, settings=None, strategies=COMPARED, progress: bool = False) -> dict:
    """Every stage of the series on the same recall script: tokens and USD per turn (all calls priced by a
    ledger), then the share of planted questions whose answer is in the request each would send."""
    from .scripts import recall_questions, recall_script

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
        table[name] = {"recall": recalled / len(questions), "total_input_tokens": r.total_input_tokens,
                       "max_turn_input_tokens": r.max_turn_input_tokens, "cost_usd": r.total_cost_usd,
                       "cost_by_purpose": r.cost_by_purpose}
        if hasattr(strategy, "close"):
            strategy.close()
    return {"turns": turns, "questions": len(questions), "table": table, "results": results}


def run_compare(args: argparse.Namespace) -> int:
    """`compare`: the capstone table (recall, tokens, cost) for every stage of the series."""
    out = compare_strategies(args.turns, progress=args.progress)
    if args.json:
        print(json.dumps({"turns": out["turns"], "questions": out["questions"], "table": out["table"]}))
        return 0
    print(f"{'strategy':>10} {'recall':>7} {'total input':>12} {'max/turn':>9} {'cost USD':>9}")
    for name, row in out["table"].items():
        print(f"{name:>10} {row['recall']:>7.0%} {row['total_input_tokens']:>12,} {row['max_turn_input_tokens']:>9,} "
              f"{row['cost_usd']:>9.4f}")
    return 0


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="every stage on one scripted conversation: recall, tokens, cost")
    p.add_argument("--turns", type=_positive_int, default=150)
    p.add_argument("--json", action="store_true")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    p.set_defaults(func=run_compare)


# ---------------------------------------------------------------------------- longmem (issue 13)

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
    from .longmem import format_markdown, format_table, load_split, run_longmem

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


def _add_longmem(sub) -> None:
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


# ---------------------------------------------------------------------------- entry point

SUBCOMMANDS: list[Callable] = [_add_cost, _add_overhead, _add_recall, _add_compare, _add_retrieval, _add_load,
                               _add_longmem]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m helpers.bench",
                                     description="Measure the memory strategies of Goldfish to Elephant.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse `argv` and run the chosen subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
