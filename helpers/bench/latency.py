"""Search latency, cold start and memory of one user's search: what `python -m helpers.bench retrieval` measures. Tools for further/04_memory_in_production, section 'Which retrieval wins? Measure it'.

For one size (the measured user's memories, plus a tenth as many of other users), `run_retrieval_benchmark`
fills a throwaway database as an import would (helpers.bench.synthetic), then, in a NEW process (as a kernel
restart, a `--show-request` or a web worker would), opens a `MemoryIndex` and times the first search — the cold
start, which opens the user's index file — and then `queries` questions in each mode, and reads the process's
memory (RSS). The same process then opens the user the old way, reading every memory document
(`index_files=False`), times that first search too, and checks that both give identical results for every
question and mode. On mongomock (tests) everything runs in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from bson import ObjectId

from helpers.bench.synthetic import embedded_bases, fill_user, query_texts
from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory.facts_worker import latency_summary
from helpers.retrieval import MemoryIndex
from helpers.retrieval.embeddings import embed_query, get_embedder
from helpers.retrieval.snapshot import index_root, remove_database_files, snapshot_path

if TYPE_CHECKING:  # pragma: no cover
    from helpers.config import Settings
    from helpers.db.store import Store
    from helpers.retrieval.embeddings import Embedder

__all__ = ["run_retrieval_benchmark", "measure_user", "agreement", "rss_mb", "in_new_process", "MODES_TIMED"]

MODES_TIMED = ("hybrid", "vector", "lexical", "hybrid_search_only_exact")  # + with --approximate: see NOTE
USER = "bench-user"
NOTE = (
    "Measured in a new process (the local server; on mongomock, in this one). cold_start_ms: a new index's "
    "first search on the default exact path, the question embedded, the embedding model loaded before the clock; "
    "model_load_ms: loading it (the process's first embedding call); cold_start_with_model_load_ms: their sum, "
    "what a new process pays; cold_start_approximate_ms (--approximate): the same first search with coarse lists. "
    "ms.embed: embedding a question alone; ms.hybrid, ms.vector: a search on the default exact path, the question "
    "embedded anew each time (no embedding cache); ms.lexical: BM25 alone, nothing embedded; "
    "ms.hybrid_search_only_exact: the exact hybrid search given the question's vector (the search alone); "
    "ms.hybrid_approximate and ms.hybrid_search_only (--approximate): the same two with coarse lists. Every query "
    "is a distinct text (distinct_queries)."
)


def rss_mb() -> dict:
    """This process's resident memory now and at its peak, in MB (Linux /proc; else the peak from getrusage)."""
    try:
        status = dict(line.split(":", 1) for line in open("/proc/self/status", encoding="ascii") if ":" in line)
        return {"now": int(status["VmRSS"].split()[0]) // 1024, "peak": int(status["VmHWM"].split()[0]) // 1024}
    except (OSError, KeyError, ValueError):
        import resource

        return {"now": None, "peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}


def _results(index: MemoryIndex, user: str, texts: list[str], k: int) -> list:
    return [
        [(h.id, h.score) for h in index.search(user, text, k=k, mode=mode)]
        for text in texts
        for mode in ("hybrid", "vector", "lexical")
    ]


class FreshEmbeddings:
    """The embedder, with every call computed anew: a timing that says "the question embedded" must contain an
    embedding, and the local MiniLM answers a batch it has seen from its cache (helpers.retrieval.minilm). Other
    embedders (tests' HashEmbedder, Voyage) keep no cache and are called as they are."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name, self.dim = inner.name, inner.dim

    def embed(self, texts: list[str], **kw) -> np.ndarray:
        compute = getattr(self.inner, "_embed_batches", None)  # LocalMiniLM's uncached forward pass
        return compute(list(texts)) if callable(compute) and not kw and texts else self.inner.embed(texts, **kw)

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def measure_user(
    store: Store,
    user: str,
    queries: int,
    *,
    k: int = 5,
    seed: int = 1,
    compare: bool = True,
    embedder=None,
    approximate: bool = False,
) -> dict:
    """In this process: the cold start of `user` on the default (exact) path: a new MemoryIndex's first search,
    its question embedded, with the embedding model already loaded (`cold_start_ms`) and with loading it counted
    (`cold_start_with_model_load_ms`, when this process loads it: `embedder` None); p50/p95 per mode over
    `queries` distinct questions on the default path, each embedded anew (FreshEmbeddings); RSS; with
    `approximate`, the cold start and hybrid search of an index using coarse lists too; with `compare`, the first
    search reading every document instead, and whether it gives identical results."""
    started = time.perf_counter()
    loads_model = embedder is None
    embedder = embedder or get_embedder()
    embedder.embed(["the embedding model is loaded before the clock starts"])
    model_load_ms = (time.perf_counter() - started) * 1000 if loads_model else None
    fresh = FreshEmbeddings(embedder)
    texts = query_texts(queries, np.random.default_rng(seed))

    def cold_start(**options) -> tuple[MemoryIndex, float]:
        t0 = time.perf_counter()
        opened = MemoryIndex(store, fresh, **options)
        opened.search(user, "what do you remember about me?", k=k)
        return opened, (time.perf_counter() - t0) * 1000

    exact, cold_ms = cold_start()  # the default: every ranking exact
    timed = ["embed", "hybrid", "vector", "lexical", "hybrid_search_only_exact"]
    if approximate:
        index, approx_cold_ms = cold_start(approximate=True)  # the same file, with its coarse lists
        timed += ["hybrid_approximate", "hybrid_search_only"]
    timings: dict[str, list[float]] = {name: [] for name in timed}
    seen: set[str] = set()

    def timed_search(name: str, searcher: MemoryIndex, text: str, **kw) -> None:
        t0 = time.perf_counter()
        hits = searcher.search(user, text, k=k, **kw)
        timings[name].append((time.perf_counter() - t0) * 1000)
        seen.update(h.id for h in hits)

    for text in texts:
        t0 = time.perf_counter()
        vector = embed_query(fresh, text)
        timings["embed"].append((time.perf_counter() - t0) * 1000)
        for mode in ("hybrid", "vector", "lexical"):
            timed_search(mode, exact, text, mode=mode)
        timed_search("hybrid_search_only_exact", exact, text, query_vector=vector)
        if approximate:
            timed_search("hybrid_approximate", index, text)
            timed_search("hybrid_search_only", index, text, query_vector=vector)
    memory = rss_mb()
    owners = {
        doc["user_id"] for doc in store.memories.find({"_id": {"$in": [ObjectId(i) for i in seen]}}, {"user_id": 1})
    }
    report = {
        "cold_start_ms": round(cold_ms, 1),
        "model_load_ms": round(model_load_ms, 1) if model_load_ms is not None else None,
        "cold_start_with_model_load_ms": round(cold_ms + model_load_ms, 1) if model_load_ms is not None else None,
        "opened_from": "index file" if exact.stats["file_opens"] else "every memory document",
        "open_ms": exact.stats["file_open_ms"] or exact.stats["full_load_ms"],  # of the cold start: the user opened
        "distinct_queries": len(set(texts)),
        "ms": {name: latency_summary(values) for name, values in timings.items()},
        "rss_mb": memory["now"],
        "rss_peak_mb": memory["peak"],
        "isolation_violations": len(owners - {user}),
    }
    if approximate:
        report["cold_start_approximate_ms"] = round(approx_cold_ms, 1)
    report["coarse"] = agreement(index if approximate else exact, exact, user, texts, k)
    if compare:
        started = time.perf_counter()
        reads_all = MemoryIndex(store, fresh, index_files=False, approximate=False)
        reads_all.search(user, "what do you remember about me?", k=k)
        report["first_search_reading_every_memory_ms"] = round((time.perf_counter() - started) * 1000, 1)
        report["identical_results"] = _results(exact, user, texts, k) == _results(reads_all, user, texts, k)
    return report


def agreement(index: MemoryIndex, exact: MemoryIndex, user: str, texts: list[str], k: int, pool: int = 50) -> dict:
    """How the searches of `index` (coarse lists once the user has COARSE_MIN_ROWS memories) agree with exact
    ones: the share of questions whose hybrid top `k` is identical, and the embedding ranking's recall of the
    exact top `k` and top `pool` (the candidates the fusion sees)."""
    same, recall_k, recall_pool = 0, [], []
    for text in texts:
        hybrid = [h.id for h in index.search(user, text, k=k)]
        same += hybrid == [h.id for h in exact.search(user, text, k=k)]
        found = [h.id for h in index.search(user, text, k=pool, mode="vector", half_life_days=None)]
        truth = [h.id for h in exact.search(user, text, k=pool, mode="vector", half_life_days=None)]
        recall_k.append(len(set(found[:k]) & set(truth[:k])) / max(1, len(truth[:k])))
        recall_pool.append(len(set(found) & set(truth)) / max(1, len(truth)))
    return {
        "used": bool(index.stats["coarse_searches"]),
        "hybrid_top_k_identical": round(same / len(texts), 4),
        "vector_recall_at_k": round(float(np.mean(recall_k)), 4),
        f"vector_recall_at_{pool}": round(float(np.mean(recall_pool)), 4),
    }


def in_new_process(store: Store, function: str, kwargs: dict, env: dict | None = None) -> dict:
    """Run `helpers.bench.<module>.<function>(store, **kwargs)` in a new Python process on the same database
    (a local server or MONGODB_URI store) and return its JSON result."""
    module, name = function.rsplit(".", 1)
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from helpers.config import load_settings\n"
        "from helpers.db.store import open_store\n"
        f"from helpers.bench.{module} import {name}\n"
        "args = json.loads(sys.argv[1])\n"
        "local = {'mongodb_uri': None, 'data_dir': Path(args['data_dir'])} if args['data_dir'] else {}\n"
        "store = open_store(load_settings().with_(db_name=args['db'], **local), fallback=False)\n"
        f"print(json.dumps({name}(store, **args['kwargs'])))\n"
    )
    data_dir = str(store.data_dir) if store.kind == "local" else None
    args = json.dumps({"db": store.db.name, "data_dir": data_dir, "kwargs": kwargs})
    done = subprocess.run(
        [sys.executable, "-c", code, args], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    if done.returncode != 0:
        raise RuntimeError(f"the measuring process failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_retrieval_benchmark(
    memories: int = 10_000,
    queries: int = 200,
    *,
    store: Store | None = None,
    embedder: Embedder | None = None,
    settings: Settings | None = None,
    distinct: int = 400,
    others: int | None = None,
    k: int = 5,
    seed: int = 0,
    compare: bool = True,
    approximate: bool = False,
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Fill a throwaway database with `memories` memories of one user (and `others`, default a tenth as many,
    of three other users), then measure that user (`measure_user`) in a new process; drops the database and
    its index files afterwards unless `keep`."""
    say = progress or (lambda message: None)
    rng = np.random.default_rng(seed)
    owned = store is None
    base = open_store(settings or load_settings()) if owned else store
    bench_store = base.with_db(f"bench_retrieval_{uuid.uuid4().hex[:10]}")
    embedder = embedder or get_embedder()
    others = memories // 10 if others is None else others
    try:
        say(f"embedding {distinct} distinct texts ...")
        bases = embedded_bases(embedder, min(distinct, memories), rng)
        writer = MemoryIndex(bench_store, embedder, max_users=1, approximate=approximate)
        started = time.perf_counter()
        say(f"writing {memories:,} memories of the measured user and {others:,} of others ...")
        fill_user(writer, USER, memories, rng, bases)
        for i in range(3):
            fill_user(writer, f"bench-other-{i}", others // 3 + (i < others % 3), rng, bases, first_seq=memories)
        fill_s = time.perf_counter() - started
        root = index_root(bench_store)
        path = snapshot_path(root, bench_store.db.name, USER) if root is not None else None
        say(f"measuring in a new process ({queries} queries) ...")
        kwargs = {"user": USER, "queries": queries, "k": k, "compare": compare, "approximate": approximate}
        if bench_store.kind == "mongomock":
            measured = measure_user(bench_store, **kwargs, embedder=embedder)
        else:
            measured = in_new_process(bench_store, "latency.measure_user", kwargs)
        return {
            "store": bench_store.describe(),
            "store_kind": bench_store.kind,
            "backend": writer.vector_backend,
            "embedder": embedder.name,
            "memories": memories,
            "other_users_memories": others,
            "queries": queries,
            "k": k,
            "distinct_embedded": len(bases),
            "note": f"{len(bases)} distinct texts were embedded; every memory reuses one of those vectors plus "
            "Gaussian noise (sigma 0.01 per dimension, renormalised). " + NOTE,
            "fill_s": round(fill_s, 2),
            "index_file_mb": round(path.stat().st_blocks * 512 / 2**20, 1) if path and path.exists() else None,
            **measured,
        }
    finally:
        if not keep:
            bench_store.client.drop_database(bench_store.db.name)
            remove_database_files(bench_store)
        if owned:
            base.close()
