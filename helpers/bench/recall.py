"""The `recall` benchmark: recall of planted facts and details, and memory tokens per question, per memory design. Tools for further/04_memory_in_production, "Which retrieval wins? Measure it"."""

from __future__ import annotations

import argparse
import json

from tqdm import tqdm  # text bar: a widget bar saved in a notebook shows "model not found" after a reload

from helpers.bench.common import positive_int
from helpers.bench.scoring import answer_in_request, mentions
from helpers.config import Settings, load_settings
from helpers.db.store import mongomock_store
from helpers.memory import BoundedMemory, HistoryMemory, VectorMemory
from helpers.retrieval import format_block, pack_by_value
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import simulation_client
from helpers.tokens import local_tokens

__all__ = ["RECALL_STRATEGIES", "measure_recall", "run_recall", "add_recall"]


RECALL_STRATEGIES = (
    "naive",
    "last_k",
    "bounded",
    "facts_only",
    "episodic_only",
    "vector_only",
    "lexical_only",
    "hybrid",
    "bounded_vector",
    "bounded_hybrid",
)


def measure_recall(
    turns: int = 150,
    *,
    budget: int = 300,
    summary_max_tokens: int = 120,
    memory_budget: int = 300,
    keep_last: int = 6,
    settings: Settings | None = None,
    progress: bool = False,
) -> dict:
    """Recall benchmark: run the recall script once per memory design, then ask every planted question.

    A question counts as recalled when its answer is in the request the strategy would send (system +
    messages); memory tokens = that request's input tokens minus the same persona + question alone.
    Retrieval-only rows (facts/episodic/vector/lexical/hybrid) send persona + retrieved block + question.
    """
    settings = settings or load_settings()
    client = simulation_client(settings)
    script = recall_script(turns)
    questions = recall_questions()
    common = {"system": TRIP_PERSONA}
    store = mongomock_store("recall")
    runs = {
        "naive": HistoryMemory(client, settings, **common),
        "last_k": HistoryMemory(client, settings, keep_last=keep_last, **common),
        "bounded": BoundedMemory(
            client,
            settings,
            store=store,
            user_id="bounded",
            session_id="recall",
            budget=budget,
            summary_max_tokens=summary_max_tokens,
            **common,
        ),
        "bounded_hybrid": VectorMemory(
            client,
            settings,
            store=store,
            user_id="vector",
            session_id="recall",
            budget=budget,
            summary_max_tokens=summary_max_tokens,
            memory_budget=memory_budget,
            **common,
        ),
        "bounded_vector": VectorMemory(
            client,
            settings,
            store=store,
            user_id="vector-only",
            session_id="recall",
            budget=budget,
            summary_max_tokens=summary_max_tokens,
            memory_budget=memory_budget,
            mode="vector",
            **common,
        ),
    }
    for name, strategy in runs.items():
        for text in tqdm(script, desc=name, disable=not progress, leave=False):
            strategy.turn(text)
    vector = runs["bounded_hybrid"]

    ranks: dict[str, dict[str, int | None]] = {}

    def retrieval_only(kinds, mode, name):
        def build(question):
            ranked = vector.long_term.index.search("vector", question, k=20, kinds=kinds, mode=mode)
            answer = next(a for _k, q, a in questions if q == question)
            found = [i for i, h in enumerate(ranked, 1) if mentions(h.text, answer)]
            ranks.setdefault(name, {})[question] = found[0] if found else None
            hits = vector.long_term.index.search("vector", question, k=8, kinds=kinds, mode=mode)
            block = format_block(pack_by_value(hits, memory_budget, local_tokens))  # as the vector stage packs
            return {
                "system": TRIP_PERSONA + ("\n\n" + block if block else ""),
                "messages": [{"role": "user", "content": question}],
            }

        return build

    builders = {
        name: runs[name].build_request for name in ("naive", "last_k", "bounded", "bounded_vector", "bounded_hybrid")
    }
    builders.update(
        {
            "facts_only": retrieval_only(("fact",), "hybrid", "facts_only"),
            "episodic_only": retrieval_only(("episode",), "hybrid", "episodic_only"),
            "vector_only": retrieval_only(("fact", "episode"), "vector", "vector_only"),
            "lexical_only": retrieval_only(("fact", "episode"), "lexical", "lexical_only"),
            "hybrid": retrieval_only(("fact", "episode"), "hybrid", "hybrid"),
        }
    )

    def tokens(request):
        kwargs = {"system": request["system"]} if request.get("system") else {}
        return client.messages.count_tokens(
            model=settings.chat_model, messages=request["messages"], **kwargs
        ).input_tokens

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
        by_kind = {
            k: sum(q["recalled"] for q in per_question if q["kind"] == k)
            / max(1, sum(q["kind"] == k for q in per_question))
            for k in ("fact", "detail", "paraphrase", "exact")
        }
        rr = [1 / r if r else 0.0 for r in ranks.get(name, {}).values()]
        rows[name] = {
            "recall": hits / len(questions),
            "recall_facts": by_kind["fact"],
            "mrr": round(sum(rr) / len(rr), 3) if rr else None,
            "recall_details": by_kind["detail"],
            "recall_paraphrases": by_kind["paraphrase"],
            "recall_exact": by_kind["exact"],
            "memory_tokens_per_question": round(sum(memory_tokens) / len(memory_tokens), 1),
            "questions": per_question,
        }
    return {
        "turns": turns,
        "budget": budget,
        "summary_max_tokens": summary_max_tokens,
        "memory_budget": memory_budget,
        "keep_last": keep_last,
        "questions": len(questions),
        "strategies": rows,
    }


def run_recall(args: argparse.Namespace) -> int:
    """`recall`: recall of planted facts and details, and memory tokens per question, per strategy."""
    result = measure_recall(
        args.turns,
        budget=args.budget,
        summary_max_tokens=args.summary_max_tokens,
        memory_budget=args.memory_budget,
        progress=args.progress,
    )
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"recall after {result['turns']} turns ({result['questions']} planted questions; window {args.budget}, "
        f"summary cap {args.summary_max_tokens}, memory budget {args.memory_budget} tokens)"
    )
    print(
        f"{'strategy':>16} {'recall':>7} {'facts':>6} {'details':>8} {'reworded':>9} {'exact':>6} {'memory tokens/question':>23} "
        f"{'MRR':>6}"
    )
    for name, row in result["strategies"].items():
        mrr = f"{row['mrr']:.3f}" if row["mrr"] is not None else "-"
        print(
            f"{name:>16} {row['recall']:>7.0%} {row['recall_facts']:>6.0%} {row['recall_details']:>8.0%} "
            f"{row['recall_paraphrases']:>9.0%} {row['recall_exact']:>6.0%} {row['memory_tokens_per_question']:>23,.0f} "
            f"{mrr:>6}"
        )
    return 0


def add_recall(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recall",
        help="recall of planted facts/details per memory strategy",
        description="Run the recall script through every memory design and ask the planted questions.",
    )
    p.add_argument("--turns", type=positive_int, default=150)
    p.add_argument("--budget", type=positive_int, default=300, help="window budget in tokens")
    p.add_argument("--summary-max-tokens", type=positive_int, default=120)
    p.add_argument("--memory-budget", type=positive_int, default=300)
    p.add_argument("--json", action="store_true")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    p.set_defaults(func=run_recall)
