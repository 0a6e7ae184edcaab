"""Tools: how the coarse lists' approximate ranking agrees with the exact one on real conversations (`python -m helpers.bench coarse --data PATH`).

`bench retrieval` times the coarse lists (helpers.retrieval.coarse) at 50,000 memories, but its memories are
400 embedded texts plus noise: tight clusters, on which an inverted-file index is at its best. Here every turn
of the LoCoMo conversations of one part (tune or report, helpers.bench.longmem.locomo) becomes a memory of one
user, embedded by the real model, the lists are trained with the threshold lowered to that user's size, and
each of the part's questions is searched twice, with the lists and exactly (helpers.bench.latency.agreement).
The data is read from a path and never committed; only the figures are.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from helpers.bench.latency import agreement
from helpers.bench.longmem.locomo import locomo_split, read_locomo
from helpers.bench.results import machine, run_provenance, write_results_file
from helpers.db.store import mongomock_store
from helpers.retrieval import MemoryIndex
from helpers.retrieval.coarse import PROBE_SHARE, train
from helpers.retrieval.embeddings import get_embedder

__all__ = ["coarse_on_real_data", "add_coarse"]

USER = "locomo-reader"
SHARES = (0.1, 0.2, 0.3, 0.4, 0.5)


def coarse_on_real_data(path: str, part: str, *, k: int = 5, embedder=None) -> dict:
    """The agreement figures for one part of the LoCoMo file at `path` (every turn a memory of one user)."""
    embedder = embedder or get_embedder()
    conversations = locomo_split(read_locomo(path), part)
    texts = [f"{t.get('speaker') or t['role']}: {t['content']}" for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    store = mongomock_store(db_name="bench_coarse")
    writer = MemoryIndex(store, embedder, index_files=False)
    vectors = embedder.embed(texts)
    for start in range(0, len(texts), 500):
        docs = [
            writer.new_doc(USER, "episode", text, vectors[i], None)
            for i, text in enumerate(texts[start : start + 500], start=start)
        ]
        writer.insert_batch(USER, docs)
    sweep = probe_sweep(np.asarray(vectors, dtype=np.float32), embedder.embed(questions), k)
    approximate = MemoryIndex(store, embedder, index_files=False, approximate=True, coarse_min_rows=len(texts))
    exact = MemoryIndex(store, embedder, index_files=False)
    figures = agreement(approximate, exact, USER, questions, k)
    return {
        "part": part,
        "conversations": len(conversations),
        "memories": len(texts),
        "questions": len(questions),
        "lists": approximate.cache.get(USER).coarse.lists,
        "probe_share": PROBE_SHARE,
        "k": k,
        **figures,
        "probe_sweep": sweep,
    }


def probe_sweep(vectors: np.ndarray, questions: np.ndarray, k: int, shares=SHARES) -> list[dict]:
    """The embedding ranking alone (no names, recency or fusion) per probe share: the share of rows scored
    and the recall of the exact top `k` and top 50. PROBE_SHARE was chosen from this on the tune part."""
    live = np.ones(len(vectors), dtype=bool)
    coarse, exact = train(vectors, live), questions @ vectors.T
    out = []
    for share in shares:
        scanned, at_k, at_50 = [], [], []
        for i, question in enumerate(questions):
            rows, sims = coarse.probe(question, vectors, live, share=share)
            got, truth = rows[np.argsort(-sims)], np.argsort(-exact[i])
            scanned.append(len(rows) / len(vectors))
            at_k.append(len(set(got[:k]) & set(truth[:k])) / k)
            at_50.append(len(set(got[:50]) & set(truth[:50])) / 50)
        out.append(
            {
                "share": share,
                "rows_scored": round(float(np.mean(scanned)), 3),
                "recall_at_k": round(float(np.mean(at_k)), 3),
                "recall_at_50": round(float(np.mean(at_50)), 3),
            }
        )
    return out


def run_coarse(args: argparse.Namespace) -> int:
    doc = {
        "provenance": run_provenance("python -m helpers.bench " + " ".join(sys.argv[1:])),
        "note": (
            "Every turn of a part's LoCoMo conversations is a memory of one user, embedded by the real model; "
            "the coarse lists are trained at that size (the threshold lowered) and every question is searched "
            "with them and exactly. PROBE_SHARE was chosen on the tune part (the smallest share in its "
            "probe_sweep keeping 97% of the exact embedding top 50); the report part was not used to choose it."
        ),
        "parts": [coarse_on_real_data(args.data, part, k=args.k) for part in args.parts],
    }
    doc["provenance"]["machine_at_end"] = machine()
    if args.out:
        write_results_file(args.out, doc)
    print(json.dumps(doc["parts"], indent=1))
    return 0


def add_coarse(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "coarse",
        help="agreement of the coarse lists' approximate ranking with the exact one, on real conversations",
        description="Every turn of the LoCoMo conversations of a part becomes a memory of one user; each question "
        "is searched with the coarse lists (trained at that size) and exactly; prints how often they agree.",
    )
    p.add_argument("--data", required=True, metavar="PATH", help="a LoCoMo-format JSON file (never committed)")
    p.add_argument("--parts", nargs="+", default=["tune", "report"], choices=["tune", "report"])
    p.add_argument("--k", type=int, default=5, help="hits per question (default 5)")
    p.add_argument("--out", default=None, metavar="FILE", help="also write the results file (with its provenance)")
    p.set_defaults(func=run_coarse)
