"""Search latency at 10,000 memories: the data and timing behind `python -m helpers.bench retrieval`. Tools for further/04_memory_in_production, section 'Which retrieval wins? Measure it'."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
from bson import ObjectId

from helpers.config import load_settings
from helpers.db.store import open_store
from helpers.memory.facts_worker import latency_summary
from helpers.retrieval import MemoryIndex, utc_now
from helpers.retrieval.embeddings import embed_query, get_embedder

if TYPE_CHECKING:  # pragma: no cover
    from helpers.config import Settings
    from helpers.db.store import Store
    from helpers.retrieval.embeddings import Embedder

__all__ = ["run_retrieval_benchmark"]

_PEOPLE = ["Maya", "Jonah", "Priya", "Luis", "Hana", "Omar", "Grace", "Tomas", "Aiko", "Elena", "Kofi", "Zara"]
_PLACES = [
    "Santa Monica",
    "Pasadena",
    "Malibu",
    "Echo Park",
    "Denver",
    "Tokyo",
    "Lisbon",
    "Austin",
    "Seattle",
    "Venice Beach",
    "Silver Lake",
    "Griffith Park",
    "Joshua Tree",
    "San Diego",
    "Portland",
    "Chicago",
]
_THINGS = [
    "tacos",
    "sushi",
    "ramen",
    "jazz",
    "hiking",
    "surfing",
    "pottery",
    "chess",
    "cycling",
    "espresso",
    "board games",
    "vinyl records",
    "yoga",
    "climbing",
    "photography",
    "gardening",
]
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_FACT_TEMPLATES = [
    "The user's friend {p} loves {t}.",
    "The user visited {l} in {m}.",
    "The user's sister {p} lives in {l}.",
    "The user wants to try {t} in {l}.",
    "The user booked flight {c} to {l} for {m} {d}.",
    "The user's colleague {p} recommended {t}.",
    "The user has a dentist appointment on {m} {d}.",
    "The user paid {n} dollars for {t} lessons.",
]
_EPISODE_TEMPLATES = [
    "User: We went to {l} with {p} and had {t}.\nAssistant: That sounds lovely; {l} is great for {t}.",
    "User: My confirmation code for {l} is {c}.\nAssistant: Noted, the code for {l} is {c}.",
    "User: Remind me that {p} arrives on {m} {d}.\nAssistant: I'll remember that {p} arrives on {m} {d}.",
]
_QUERY_TEMPLATES = [
    "Where does my sister live?",
    "What did {p} recommend?",
    "When is my dentist appointment?",
    "Which flight did I book to {l}?",
    "What should I do in {l}?",
    "Who loves {t}?",
    "flight {c}",
    "What's my confirmation code for {l}?",
    "When does {p} arrive?",
    "How much did I pay for {t} lessons?",
]


def _fill(template: str, rng: np.random.Generator) -> str:
    def pick(seq: list[str]) -> str:
        return seq[int(rng.integers(len(seq)))]

    return template.format(
        p=pick(_PEOPLE),
        l=pick(_PLACES),
        t=pick(_THINGS),
        m=pick(_MONTHS),
        d=int(rng.integers(1, 29)),
        n=int(rng.integers(20, 400)),
        c=f"{pick(['UA', 'DL', 'AA', 'AS', 'B6'])}{int(rng.integers(100, 9999))}",
    )


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
    keep: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Time `search` at `memories` memories for one user (plus other users' memories) in a throwaway database.

    Fills a fresh database (on `store`'s server, default: `open_store(settings)`) and drops it afterwards
    unless `keep`. To keep the fill fast, only `distinct` texts are embedded; the other memories reuse
    those vectors plus small Gaussian noise (renormalised). Each query's time includes embedding it.
    """
    say = progress or (lambda message: None)
    rng = np.random.default_rng(seed)
    owned = store is None
    base = open_store(settings or load_settings()) if owned else store
    bench_store = base.with_db(f"bench_retrieval_{uuid.uuid4().hex[:10]}")
    embedder = embedder or get_embedder()
    others = memories // 10 if others is None else others
    try:
        index = MemoryIndex(bench_store, embedder)
        started = time.perf_counter()
        user = "bench-user"
        owners = [user] * memories + [f"bench-other-{i % 3}" for i in range(others)]
        templates = _FACT_TEMPLATES + _EPISODE_TEMPLATES
        texts = [_fill(templates[int(rng.integers(len(templates)))], rng) for _ in owners]
        distinct = max(1, min(distinct, len(texts)))
        say(f"embedding {distinct} distinct texts ...")
        base_vectors = embedder.embed(texts[:distinct])
        now = utc_now()
        docs = []
        for i, (owner, text) in enumerate(zip(owners, texts)):
            vector = base_vectors[i % distinct]
            if i >= distinct:
                vector = vector + rng.normal(0.0, 0.01, size=vector.shape).astype(np.float32)
                vector /= np.linalg.norm(vector)
            kind = "episode" if text.startswith("User:") else "fact"
            doc = index.new_doc(
                owner,
                kind,
                text,
                vector,
                {"session_id": f"s{i % 97}", "seq": i},
                now=now - timedelta(seconds=int(rng.integers(0, 365 * 86_400))),
            )
            docs.append(doc)
        say(f"inserting {len(docs):,} memories ...")
        for start in range(0, len(docs), 1000):
            bench_store.memories.insert_many(docs[start : start + 1000], ordered=False)
        mine = {doc["_id"] for doc in docs if doc["user_id"] == user}
        fill_s = time.perf_counter() - started

        load_started = time.perf_counter()
        index.search(user, "warm up", k=k)  # first search loads the user's cache
        cold_ms = (time.perf_counter() - load_started) * 1000
        query_texts = [_fill(_QUERY_TEMPLATES[i % len(_QUERY_TEMPLATES)], rng) for i in range(queries)]
        timings: dict[str, list[float]] = {
            name: [] for name in ("embed", "hybrid", "vector", "lexical", "hybrid_search_only")
        }
        violations = 0
        say(f"timing {queries} queries ...")
        for text in query_texts:
            t0 = time.perf_counter()
            vector = embed_query(embedder, text)
            timings["embed"].append((time.perf_counter() - t0) * 1000)
            for mode in ("hybrid", "vector", "lexical"):
                t0 = time.perf_counter()
                hits = index.search(user, text, k=k, mode=mode)
                timings[mode].append((time.perf_counter() - t0) * 1000)
                violations += sum(ObjectId(h.id) not in mine for h in hits)
            t0 = time.perf_counter()
            index.search(user, text, k=k, query_vector=vector)
            timings["hybrid_search_only"].append((time.perf_counter() - t0) * 1000)
        results = {name: latency_summary(values) for name, values in timings.items()}
        return {
            "store": bench_store.describe(),
            "store_kind": bench_store.kind,
            "backend": index.vector_backend,
            "embedder": embedder.name,
            "memories": memories,
            "other_users_memories": others,
            "queries": queries,
            "k": k,
            "distinct_embedded": distinct,
            "note": (
                f"{distinct} distinct texts were embedded; the other {len(docs) - distinct:,} memories reuse "
                "those vectors plus Gaussian noise (sigma 0.01 per dimension, renormalised). Query times "
                "include embedding the query, except hybrid_search_only."
            ),
            "fill_s": round(fill_s, 2),
            "cold_load_ms": round(cold_ms, 1),
            "ms": results,
            "target_p95_ms": 20.0,
            "meets_target": results["hybrid"]["p95"] <= 20.0,
            "isolation_violations": violations,
        }
    finally:
        if not keep:
            bench_store.client.drop_database(bench_store.db.name)
        if owned:
            base.close()
