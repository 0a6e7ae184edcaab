"""The `overhead` benchmark: memory-layer ms and DB round trips per bounded turn, model time excluded. Tools for further/03_summary_internals, "What the helpers add"."""

from __future__ import annotations

import argparse
import time
import uuid

import numpy as np
from pymongo import monitoring

from helpers.bench.common import positive_int, print_figures, time_model_calls
from helpers.config import Settings, load_settings
from helpers.db.auth import local_client
from helpers.db.instance import server_paths
from helpers.db.server import ensure_local_server
from helpers.db.store import Store
from helpers.memory import BoundedMemory
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import simulation_client

__all__ = ["measure_overhead", "run_overhead", "add_overhead"]


def measure_overhead(turns: int = 100, budget: int = 300, settings: Settings | None = None) -> dict:
    """Memory-layer time per bounded turn with every model call excluded, and DB round trips per turn,
    on the local store (a throwaway database, dropped afterwards)."""
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
    root = server_paths(settings.data_dir).root  # logged in as open_store is (helpers.db.auth)
    mongo = local_client(uri, root, event_listeners=[commands], tz_aware=True, journal=True)
    db_name = f"bench_overhead_{uuid.uuid4().hex[:8]}"
    store = Store(client=mongo, db=mongo[db_name], kind="local", uri=uri, data_dir=settings.data_dir)
    store.ensure_indexes()
    model_time = {"s": 0.0, "calls": 0}

    def add(seconds: float) -> None:
        model_time["s"] += seconds
        model_time["calls"] += 1

    client = time_model_calls(simulation_client(settings), add)
    memory = BoundedMemory(
        client, settings, store=store, user_id="bench", session_id=uuid.uuid4().hex, budget=budget, system=TRIP_PERSONA
    )
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
        "turns": turns,
        "budget": budget,
        "store": "local SecantusDB",
        "memory_ms_p50": round(float(np.percentile(per_turn_ms, 50)), 3),
        "memory_ms_p95": round(float(np.percentile(per_turn_ms, 95)), 3),
        "memory_ms_p50_steady": round(float(np.percentile(per_turn_ms[steady], 50)), 3),
        "db_round_trips_per_turn_mean": round(sum(trips) / len(trips), 2),
        "db_round_trips_per_turn_steady_max": max(trips[steady]),
        "model_calls_per_turn_steady_mean": round(sum(calls[steady]) / len(calls[steady]), 2),
        "count_tokens_calls_total": memory.stats["count_calls"],
        "version_conflicts": memory.stats["conflicts"],
    }


def run_overhead(args: argparse.Namespace) -> int:
    """`overhead`: memory-layer ms per turn (model calls excluded) and DB round trips per turn."""
    print_figures(measure_overhead(args.turns, args.budget), args.json)
    return 0


def add_overhead(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "overhead",
        help="memory-layer time and DB round trips per bounded turn",
        description="Bounded memory on the local store; every model call's time is excluded.",
    )
    p.add_argument("--turns", type=positive_int, default=100)
    p.add_argument("--budget", type=positive_int, default=300, help="window budget in tokens")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run_overhead)
