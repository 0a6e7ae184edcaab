"""The `load` benchmark: many concurrent bounded sessions on one store, checked against their logs. Plumbing: concurrency behind 04_bounded_memory_mongodb.

With `--users N` it measures many users' memory search in one process instead (helpers.bench.users): latency and
resident memory within INDEX_CACHE_MB, against no cap; `--out` writes that results file with its provenance.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from helpers.bench.common import positive_int, print_figures, time_model_calls
from helpers.bench.results import machine, run_provenance, write_results_file
from helpers.bench.users import measure_users
from helpers.config import Settings, load_settings
from helpers.db.store import open_store
from helpers.memory import BoundedMemory
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import simulation_client
from helpers.tools.consistency import check_consistency

__all__ = ["measure_load", "run_load", "add_load"]


def _ms(values: list[float], q: float) -> float | None:
    """The q-th percentile of `values` in ms, rounded (numpy's linear interpolation); None when no turn completed."""
    return round(float(np.percentile(values, q)), 2) if values else None


def measure_load(
    sessions: int = 50, turns: int = 20, workers: int = 8, budget: int = 300, settings: Settings | None = None
) -> dict:
    """Many bounded-memory sessions at once: threads, one BoundedMemory per session, one shared Store, the offline
    model. Reports throughput, memory-layer ms per turn (model time excluded), errors, version conflicts, and
    checks every session against its logs (helpers.tools.consistency). A throwaway database, dropped afterwards."""
    settings = settings or load_settings()
    db_name = f"bench_load_{uuid.uuid4().hex[:8]}"
    store = open_store(settings.with_(db_name=db_name), fallback=False)
    clock = threading.local()  # model seconds spent by this thread's current turn

    def offline_client():
        def add(seconds: float) -> None:
            clock.model_s = getattr(clock, "model_s", 0.0) + seconds

        return time_model_calls(simulation_client(settings), add)

    script = trip_script(turns)
    ids = [(f"load-user-{i}", uuid.uuid4().hex) for i in range(sessions)]
    memory_ms: list[float] = []
    turn_ms: list[float] = []
    errors: list[str] = []
    conflicts = [0]
    lock = threading.Lock()

    def run_session(user_id: str, session_id: str) -> None:
        memory = BoundedMemory(
            offline_client(),
            settings,
            store=store,
            user_id=user_id,
            session_id=session_id,
            budget=budget,
            system=TRIP_PERSONA,
        )
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
        "sessions": sessions,
        "turns_per_session": turns,
        "workers": workers,
        "budget": budget,
        "store": described,
        "turns": done,
        "wall_s": round(wall_s, 2),
        "turns_per_s": round(done / wall_s, 1) if wall_s else None,
        "memory_ms_p50": _ms(memory_ms, 50),
        "memory_ms_p95": _ms(memory_ms, 95),
        "turn_ms_p50": _ms(turn_ms, 50),
        "turn_ms_p95": _ms(turn_ms, 95),
        "errors": len(errors),
        "error_samples": errors[:3],
        "conflicts": conflicts[0],
        "inconsistent_sessions": len(problems),
        "problem_samples": dict(list(problems.items())[:3]),
    }


def run_load(args: argparse.Namespace) -> int:
    """`load`: many concurrent sessions; exit 1 if any turn failed or any session is inconsistent with its logs.
    With --users: many users' memory search in one process (helpers.bench.users)."""
    if args.users:
        return _run_users(args)
    figures = measure_load(args.sessions, args.turns, args.workers, args.budget)
    print_figures(figures, args.json)
    return 1 if figures["errors"] or figures["inconsistent_sessions"] else 0


def _run_users(args: argparse.Namespace) -> int:
    progress = (lambda message: print(message, file=sys.stderr)) if args.progress else None
    source = run_provenance("python -m helpers.bench " + " ".join(sys.argv[1:]))
    figures = measure_users(args.users, args.memories, args.requests, cache_mb=args.cache_mb, progress=progress)
    source["machine_at_end"] = machine()
    if args.out:
        write_results_file(args.out, {"provenance": source, "users": figures})
    print_figures(figures, args.json)
    return 0


def add_load(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "load",
        help="many concurrent bounded sessions: turns/s, memory-layer p50/p95, errors",
        description="Threads run many sessions at once on one shared store and the offline model; "
        "model time is excluded from the latency; every session is checked afterwards.",
    )
    p.add_argument("--sessions", type=positive_int, default=50, help="sessions to run (default 50)")
    p.add_argument("--turns", type=positive_int, default=20, help="turns per session (default 20)")
    p.add_argument("--workers", type=positive_int, default=8, help="threads running sessions at once (default 8)")
    p.add_argument("--budget", type=positive_int, default=300, help="window budget in tokens (default 300)")
    p.add_argument(
        "--users", type=positive_int, default=None, help="instead: this many users' memory search in one process"
    )
    p.add_argument("--memories", type=positive_int, default=1000, help="with --users: memories per user (1000)")
    p.add_argument("--requests", type=positive_int, default=2000, help="with --users: searches to serve (2000)")
    p.add_argument("--cache-mb", type=positive_int, default=None, help="with --users: the cap (INDEX_CACHE_MB)")
    p.add_argument("--out", default=None, metavar="FILE", help="with --users: also write the results file")
    p.add_argument("--progress", action="store_true", help="say what runs on stderr")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.set_defaults(func=run_load)
