"""Tools: many users in one process, latency and memory within INDEX_CACHE_MB (the `load --users` benchmark).

`python -m helpers.bench load --users 1000 --memories 1000` fills a throwaway database with that many users of
that many synthetic memories each (helpers.bench.synthetic; each user's index file written as after an import),
then serves `--requests` searches from users drawn uniformly at random — the worst case for a cache — in a NEW
process, twice: once within the cap (INDEX_CACHE_MB, `--cache-mb`), once with no cap. For each it reports the
latency of every request (a held user, or one opened from their file), the resident memory (RSS, now and peak),
how many users the process held at the end and how many it dropped.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import numpy as np

from helpers.bench.latency import in_new_process, rss_mb
from helpers.bench.synthetic import embedded_bases, fill_user, query_texts
from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory.facts_worker import latency_summary
from helpers.retrieval import MemoryIndex
from helpers.retrieval.embeddings import get_embedder
from helpers.retrieval.snapshot import index_root, remove_database_files

__all__ = ["measure_users", "serve_users", "NO_CAP_MB"]

NO_CAP_MB = 1_000_000  # "no cap": more than any run here holds


def serve_users(store, users: int, requests: int, *, cache_mb: int, k: int = 5, seed: int = 2, embedder=None) -> dict:
    """In this process: `requests` hybrid searches (the question embedded), each for a user drawn uniformly from
    `users`, with at most `cache_mb` MB held; latency of each request, RSS, users held and dropped."""
    embedder = embedder or get_embedder()
    embedder.embed(["the embedding model is loaded before the clock starts"])
    rng = np.random.default_rng(seed)
    who = rng.integers(users, size=requests)
    texts = query_texts(requests, rng)
    index = MemoryIndex(store, embedder, max_bytes=cache_mb * 2**20)
    held_ms: list[float] = []
    opened_ms: list[float] = []
    started = time.perf_counter()
    for user, text in zip(who.tolist(), texts):
        name = f"user-{user}"
        held = name in index.cache
        t0 = time.perf_counter()
        index.search(name, text, k=k)
        (held_ms if held else opened_ms).append((time.perf_counter() - t0) * 1000)
    wall = time.perf_counter() - started
    memory = rss_mb()
    return {
        "cache_mb": cache_mb,
        "ms": latency_summary(held_ms + opened_ms),
        "ms_held_user": latency_summary(held_ms),
        "ms_user_opened": latency_summary(opened_ms),
        "requests_per_s": round(requests / wall, 1),
        "rss_mb": memory["now"],
        "rss_peak_mb": memory["peak"],
        "users_held_at_end": len(index.cache.users()),
        "held_mb_at_end": round(index.cache.nbytes / 2**20, 1),
        "users_dropped": index.stats["evictions"],
        "opened_from_file": index.stats["file_opens"],
        "opened_from_documents": index.stats["full_loads"],
    }


def measure_users(
    users: int = 1000,
    memories: int = 1000,
    requests: int = 2000,
    *,
    cache_mb: int | None = None,
    store=None,
    embedder=None,
    distinct: int = 400,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Fill `users` x `memories`, then serve `requests` in a new process within `cache_mb` (default
    INDEX_CACHE_MB) and once with no cap. A throwaway database, dropped afterwards with its index files."""
    say = progress or (lambda message: None)
    cache_mb = load_settings().index_cache_mb if cache_mb is None else cache_mb
    owned = store is None
    base = open_store(load_settings()) if owned else store
    bench_store = base.with_db(f"bench_users_{uuid.uuid4().hex[:10]}")
    embedder = embedder or get_embedder()
    rng = np.random.default_rng(seed)
    try:
        bases = embedded_bases(embedder, min(distinct, memories), rng)
        writer = MemoryIndex(bench_store, embedder, max_users=1)
        started = time.perf_counter()
        for user in range(users):
            if user % 50 == 0:
                say(f"writing user {user:,} of {users:,} ({time.perf_counter() - started:.0f} s)")
            fill_user(writer, f"user-{user}", memories, rng, bases)
        fill_s = time.perf_counter() - started
        root = index_root(bench_store)
        files = sorted((root / bench_store.db.name).glob("*.idx")) if root is not None else []
        runs = {}
        for name, mb in (("capped", cache_mb), ("no_cap", NO_CAP_MB)):
            say(f"serving {requests:,} requests in a new process ({name}) ...")
            kwargs = {"users": users, "requests": requests, "cache_mb": mb}
            if bench_store.kind == "mongomock":
                runs[name] = serve_users(bench_store, **kwargs, embedder=embedder)
            else:
                runs[name] = in_new_process(bench_store, "users.serve_users", kwargs)
        return {
            "store": bench_store.describe(),
            "embedder": embedder.name,
            "users": users,
            "memories_per_user": memories,
            "requests": requests,
            "access": "each request's user drawn uniformly at random (the worst case for a cache)",
            "fill_s": round(fill_s, 1),
            "index_files": len(files),
            "index_files_mb": round(sum(p.stat().st_blocks * 512 for p in files) / 2**20, 1),
            "writer_rss_mb": rss_mb()["now"],
            **runs,
        }
    finally:
        bench_store.client.drop_database(bench_store.db.name)
        remove_database_files(bench_store)
        if owned:
            base.close()
