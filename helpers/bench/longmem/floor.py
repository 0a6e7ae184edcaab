"""The relevance floor, chosen on tuning data: recall of the vector stage at several cosine floors, one import. Tools for further/05_long_conversations, section 'One context budget, split by evidence'.

`python -m helpers.bench floor [--data LOCOMO.json] [--split tune] [--budget 2000] [--floors -1,0,0.05,...]`
imports each conversation of the split once (helpers.bench.longmem.split_study.imported), then builds every
question's request at each floor (`Packing.min_similarity`; -1 = no floor) and scores it as `bench longmem`
does: answer recall (real data: share of the answer's content words; generated data: every gold group present).
It reports, per floor, mean recall, how many questions lost recall against no floor, and the memories sent
(how many, and how many of them had a cosine below 0.15: noise). `choose` names the highest floor at which no
question loses recall: helpers.retrieval.inject.MIN_SIMILARITY is set from it (tuning data only, never the report part).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from dataclasses import replace

from helpers.bench.longmem.data import corpus
from helpers.bench.longmem.locomo import answer_recall, locomo_split, read_locomo
from helpers.bench.scoring import gold_in_request

__all__ = ["FLOORS", "floor_curve", "choose", "add_floor"]

FLOORS = (-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3)  # -1: no floor (every cosine is >= -1)
NOISE = 0.15  # a sent memory with a cosine below this is counted as noise in the report


def _cached_search(long_term) -> None:
    """Search once per question: the ranking does not depend on the floor, only the packing does."""
    plain, seen = long_term.search, {}

    def search(text: str, limit: int) -> list:
        if (text, limit) not in seen:
            seen[(text, limit)] = plain(text, limit)
        return seen[(text, limit)]

    long_term.search = search


def floor_curve(pairs: Iterable[tuple], budget: int, floors: Iterable[float] = FLOORS) -> list[dict]:
    """Per floor: mean recall, questions that lost recall against the first floor, memories sent and noise."""
    pairs, floors = list(pairs), list(floors)
    per_floor: dict[float, list[tuple[float, int, int]]] = {f: [] for f in floors}
    for memory, conv in pairs:
        long_term = memory.long_term
        long_term.context_budget = budget
        _cached_search(long_term)
        base = long_term.packing
        for floor in floors:
            long_term.packing = replace(base, min_similarity=floor)
            for q in conv.questions:
                request = memory.build_request(q.text)
                recall = (
                    answer_recall(request, q.answer)
                    if q.answer is not None
                    else float(gold_in_request(request, q.gold))
                )
                hits = memory.recall.hits if memory.recall is not None else []
                noise = sum(h.similarity is not None and h.similarity < NOISE for h in hits)
                per_floor[floor].append((recall, len(hits), noise))
        long_term.packing = base
    first = per_floor[floors[0]]
    rows = []
    for floor in floors:
        items = per_floor[floor]
        n = max(len(items), 1)
        rows.append(
            {
                "floor": floor,
                "recall": round(sum(r for r, _, _ in items) / n, 4),
                "questions_losing": sum(r < b - 1e-9 for (r, _, _), (b, _, _) in zip(items, first)),
                "memories_sent": round(sum(m for _, m, _ in items) / n, 2),
                "noise_sent": round(sum(x for _, _, x in items) / n, 2),
                "questions": len(items),
            }
        )
    return rows


def choose(rows: list[dict]) -> float:
    """The highest floor at which no question loses recall against the first row (no floor), nor does the mean."""
    return max(r["floor"] for r in rows if not r["questions_losing"] and r["recall"] >= rows[0]["recall"] - 1e-9)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of numbers") from None


def run_floor_cmd(args: argparse.Namespace) -> int:
    """`floor`: recall per relevance floor on the tuning split (one import per conversation)."""
    from helpers.bench.longmem.split_study import imported  # imports matplotlib: only when the command runs

    convs = corpus(args.split) if args.data is None else locomo_split(read_locomo(args.data), args.split)
    pairs = []
    for conv in convs:
        print(f"importing {conv.user_id} ({len(conv.turns)} turns)", file=sys.stderr, flush=True)
        pairs.append((imported(conv, budget=args.budget), conv))
    rows = floor_curve(pairs, args.budget, args.floors)
    result = {
        "data": args.data or "generated",
        "split": args.split,
        "budget": args.budget,
        "rows": rows,
        "chosen": choose(rows),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"# floor · {result['data']} · {args.split} · {args.budget:,} tokens · {rows[0]['questions']} questions")
        print(f"{'floor':>6} {'recall':>7} {'losing':>7} {'sent':>6} {'noise':>6}")
        for r in rows:
            print(
                f"{r['floor']:>6.2f} {r['recall']:>7.2%} {r['questions_losing']:>7} {r['memories_sent']:>6.2f} "
                f"{r['noise_sent']:>6.2f}"
            )
        print(f"highest floor with no recall lost: {result['chosen']:.2f}")
    return 0


def add_floor(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "floor",
        help="the vector stage's recall at several relevance floors (tuning data)",
        description="Import each conversation once, then score every question at each cosine floor "
        "(helpers.retrieval.inject.MIN_SIMILARITY is chosen from this on --split tune).",
    )
    p.add_argument("--data", default=None, metavar="PATH", help="LoCoMo-format conversations (default: generated)")
    p.add_argument("--split", choices=("tune", "report", "all"), default="tune", help="default tune")
    p.add_argument("--budget", type=int, default=2000, help="total request tokens per question (default 2000)")
    p.add_argument(
        "--floors",
        type=_floats,
        default=FLOORS,
        metavar="F1,F2,...",
        help="cosine floors to try, the first as the reference (default -1 = none, 0 … 0.3)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run_floor_cmd)
