"""The `recall` benchmark: recall of planted facts and details, and memory tokens per question, per memory design. Tools for further/04_memory_in_production, "Which retrieval wins? Measure it"."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable

from tqdm import tqdm  # text bar: a widget bar saved in a notebook shows "model not found" after a reload

from helpers.bench.common import positive_int
from helpers.bench.results import RESULTS_DIR, load_results, machine, run_provenance, write_results_file
from helpers.bench.scoring import answer_in_request, mentions
from helpers.config import Settings, load_settings
from helpers.db.store import mongomock_store
from helpers.memory import BoundedMemory, HistoryMemory, VectorMemory
from helpers.retrieval import format_block, pack_by_value
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import simulation_client
from helpers.tokens import local_tokens

__all__ = ["RECALL_STRATEGIES", "RESULTS_FILE", "measure_recall", "recall_results", "run_recall", "add_recall"]

RESULTS_FILE = RESULTS_DIR / "recall.json"  # what `python -m helpers.bench recall --out` writes; further/04 loads it
RETRIEVAL_ONLY = (
    "facts_only",
    "episodic_only",
    "vector_only",
    "lexical_only",
    "hybrid",
)  # search bounded_hybrid's index


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
    strategies: Iterable[str] = RECALL_STRATEGIES,
    progress: bool = False,
) -> dict:
    """Recall benchmark: run the recall script once per memory design, then ask every planted question.

    A question counts as recalled when its answer is in the request the strategy would send (system +
    messages); memory tokens = that request's input tokens minus the same persona + question alone.
    Retrieval-only rows (facts/episodic/vector/lexical/hybrid) send persona + retrieved block + question.
    `strategies` picks rows of RECALL_STRATEGIES (a short live run of a few); each row is the same either way.
    """
    strategies = tuple(strategies)
    unknown = [name for name in strategies if name not in RECALL_STRATEGIES]
    if unknown or not strategies:
        raise ValueError(f"strategies must be some of {', '.join(RECALL_STRATEGIES)}; got {unknown or 'none'}")
    settings = settings or load_settings()
    client = simulation_client(settings)
    script = recall_script(turns)
    questions = recall_questions()
    common = {"system": TRIP_PERSONA}
    store = mongomock_store("recall")
    bounded_kw = {"store": store, "session_id": "recall", "budget": budget, "summary_max_tokens": summary_max_tokens}
    vector_kw = {**bounded_kw, "memory_budget": memory_budget}
    makers = {
        "naive": lambda: HistoryMemory(client, settings, **common),
        "last_k": lambda: HistoryMemory(client, settings, keep_last=keep_last, **common),
        "bounded": lambda: BoundedMemory(client, settings, user_id="bounded", **bounded_kw, **common),
        "bounded_hybrid": lambda: VectorMemory(client, settings, user_id="vector", **vector_kw, **common),
        "bounded_vector": lambda: VectorMemory(
            client, settings, user_id="vector-only", mode="vector", **vector_kw, **common
        ),
    }
    needed = set(strategies) | ({"bounded_hybrid"} if set(strategies) & set(RETRIEVAL_ONLY) else set())
    runs = {name: make() for name, make in makers.items() if name in needed}
    for name, strategy in runs.items():
        for text in tqdm(script, desc=name, disable=not progress, leave=False):
            strategy.turn(text)
    vector = runs.get("bounded_hybrid")

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

    builders = {name: strategy.build_request for name, strategy in runs.items()}
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
    for name in (name for name in RECALL_STRATEGIES if name in strategies):
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


def recall_results() -> dict:
    """The results file `python -m helpers.bench recall --out docs/results/recall.json` wrote (further/04 loads it)."""
    return load_results(RESULTS_FILE.stem)


def run_recall(args: argparse.Namespace) -> int:
    """`recall`: recall of planted facts and details, and memory tokens per question, per strategy; with --out, also
    the results file (with its provenance: command, commit, date, mode, machine)."""
    settings = ("turns", "budget", "summary_max_tokens", "memory_budget")
    command = " ".join(
        ["python -m helpers.bench recall", *(f"--{k.replace('_', '-')} {getattr(args, k)}" for k in settings)]
        + ([f"--out {args.out}"] if args.out else [])
    )
    provenance = run_provenance(
        command, data="helpers.sim.scripts.recall_script and recall_questions, persona TRIP_PERSONA"
    )
    result = measure_recall(
        args.turns,
        budget=args.budget,
        summary_max_tokens=args.summary_max_tokens,
        memory_budget=args.memory_budget,
        progress=args.progress,
    )
    if args.out:
        provenance["finished"] = machine()
        write_results_file(args.out, {"provenance": provenance, **result})
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
    p.add_argument(
        "--out", default=None, metavar="FILE", help=f"also write the results file (further/04: {RESULTS_FILE.name})"
    )
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    p.set_defaults(func=run_recall)
