"""Into the prompt: tag sanitiser, dated lines, packing. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Memories and summaries go into the system prompt as data, inside `<remembered_memories>` and
`<conversation_summary>` blocks. `neutralise_tags` is the one sanitiser for both: a user who types
`</remembered_memories>` cannot close the block early and pose as instructions.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Callable

from helpers import prompts
from helpers.tokens import local_tokens
from helpers.retrieval.schema import Hit

if TYPE_CHECKING:  # pragma: no cover
    from helpers.retrieval.index import MemoryIndex

__all__ = ["BLOCK_TAG", "neutralise_tags", "memory_line", "format_memories", "pack", "retrieve_block"]

BLOCK_TAG = re.compile(r"<\s*/?\s*(?:remembered_memories|conversation_summary)\s*>", re.I)


def neutralise_tags(text: str) -> str:
    """`text` with every opening or closing memory/summary block tag replaced by '[tag removed]'."""
    return BLOCK_TAG.sub("[tag removed]", text)


def memory_line(hit: Hit) -> str:
    """`[2026-11-29] The user lives in Denver.` (episodes flattened to one line)."""
    date = hit.date.strftime("%Y-%m-%d") if hit.date else "????-??-??"
    text = neutralise_tags(" ".join(hit.text.split()))
    label = " (from a conversation)" if hit.kind == "episode" else ""
    return f"[{date}]{label} {text}"


def format_memories(hits: list[Hit], *, order: str = "date") -> str:
    """The block injected into the system prompt, one dated line per memory, marked as data ("" for no hits).

    order="date" lists oldest first, so newer statements come last and win; "given" keeps the order passed.
    """
    if not hits:
        return ""
    if order == "date":
        hits = sorted(hits, key=lambda h: (h.date or datetime.min.replace(tzinfo=timezone.utc), h.id))
    elif order != "given":
        raise ValueError(f"order must be 'date' or 'given', got {order!r}")
    return prompts.MEMORY_OPEN + "\n".join(memory_line(h) for h in hits) + prompts.MEMORY_CLOSE


def pack(hits: list[Hit], budget_tokens: int, count: Callable[[str], int] | None = None) -> list[Hit]:
    """The best hits (in the order given) whose `format_memories` block fits `budget_tokens`.

    Greedy: take each hit if it still fits, skip it otherwise (a shorter, lower-ranked one may fit).
    `count` counts tokens (default: the offline model's local BPE); the returned block is verified
    with it, so `count(format_memories(packed)) <= budget_tokens` always holds.
    """
    count = count or local_tokens
    if budget_tokens <= 0 or not hits:
        return []
    frame = count(prompts.MEMORY_OPEN + prompts.MEMORY_CLOSE)
    used, chosen = frame, []
    for hit in hits:
        cost = count(memory_line(hit)) + 1  # + the newline that joins it
        if used + cost <= budget_tokens:
            chosen.append(hit)
            used += cost
    while chosen and count(format_memories(chosen)) > budget_tokens:  # BPE is not exactly additive
        chosen.pop()
    return chosen


def retrieve_block(index: "MemoryIndex", user_id: str, query: str, budget_tokens: int, *, k: int = 8,
                   mode: str = "hybrid", count: Callable[[str], int] | None = None,
                   now: datetime | None = None) -> tuple[str, list[Hit]]:
    """One turn's retrieval: search → pack into the budget → the system-prompt block (and the hits used)."""
    hits = pack(index.search(user_id, query, k=k, mode=mode, now=now), budget_tokens, count)
    return format_memories(hits), hits
