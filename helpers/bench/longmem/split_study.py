"""Recall against the budget split: import a long conversation once, then score many allocation policies. Tools for further/05_long_conversations, section 'One context budget, split by evidence'.

Used to choose `BudgetPolicy` / `Packing` on the tuning half of `python -m helpers.bench longmem`
(never on the report half) and to draw notebook 05's plot of recall against memories' share.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt

from helpers.bench.scoring import gold_in_request
from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.memory import VectorMemory
from helpers.memory.budget import BudgetPolicy
from helpers.memory.importer import import_turns
from helpers.memory.transcript import read_transcript
from helpers.retrieval.inject import Packing
from helpers.sim.simulate import simulation_client

if TYPE_CHECKING:  # pragma: no cover
    from helpers.bench.longmem.data import Conversation

__all__ = ["imported", "score", "share_curve", "plot_share_curve"]


def imported(
    conv: Conversation, *, settings=None, store=None, budget: int = 2000, client=None, user_id: str | None = None
) -> VectorMemory:
    """A vector-stage memory with `conv` imported (dated, through the same path as `--import`)."""
    settings = settings or load_settings()
    store = store or mongomock_store(f"split-{conv.user_id}")
    user_id = user_id or conv.user_id
    memory = VectorMemory(
        client or simulation_client(settings),
        settings,
        store=store,
        user_id=user_id,
        session_id=f"{user_id}-study",
        context_budget=budget,
    )
    import_turns(memory, read_transcript(conv.jsonl_lines(), conv.user_id))
    return memory


def score(
    pairs: Iterable[tuple[VectorMemory, Conversation]],
    budget: int,
    *,
    policy: BudgetPolicy | None = None,
    packing: Packing | None = None,
    lexical_weight: float | None = None,
) -> dict:
    """Answer-in-request recall and mean request tokens over every question, with these knobs set."""
    hits = total = tokens = 0
    for memory, conv in pairs:
        long_term = memory.long_term
        long_term.context_budget = budget
        long_term.policy = policy or long_term.policy
        long_term.packing = packing or long_term.packing
        long_term.lexical_weight = lexical_weight
        for q in conv.questions:
            request = memory.build_request(q.text)
            hits += gold_in_request(request, q.gold)
            tokens += memory.client.messages.count_tokens(
                model=request["model"], system=request["system"], messages=request["messages"]
            ).input_tokens
            total += 1
    return {"recall": hits / max(total, 1), "tokens": tokens / max(total, 1), "questions": total}


def share_curve(
    pairs: list,
    budget: int,
    shares: Iterable[float] = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0),
    policy: BudgetPolicy = BudgetPolicy(),
) -> list[dict]:
    """Recall when memories may take each `share` of the budget (strong, weak and long-history evidence alike)."""
    return [
        {"share": s, **score(pairs, budget, policy=replace(policy, strong_share=s, weak_share=s, long_share=s))}
        for s in shares
    ]


def plot_share_curve(rows: list[dict], budget: int, ax=None):
    """Recall (%) against memories' share of the context budget; the title states the best share."""
    ax = ax or plt.subplots(figsize=(6, 3.2))[1]
    shares = [r["share"] for r in rows]
    ax.plot(shares, [100 * r["recall"] for r in rows], marker="o")
    best = max(rows, key=lambda r: r["recall"])
    ax.set_xlabel("memories' share of the budget left after the last exchange")
    ax.set_ylabel("answer in request (%)")
    ax.set_title(f"At {budget:,} tokens, recall peaks when memories get {best['share']:.0%}")
    ax.grid(alpha=0.3)
    return ax
