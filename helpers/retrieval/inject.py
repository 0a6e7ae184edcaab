"""Into the prompt: the one tag sanitiser, the dated memory block, packing by value per token. Taught in 05_vector_memory, section 'Extraction → storage → retrieval → injection'.

Memories and summaries go into the system prompt as data, inside `<remembered_memories>` and
`<conversation_summary>` blocks. `neutralise_tags` (defined beside the block tags in helpers.prompts) is the one
sanitiser for both: a user who types `</remembered_memories>` cannot close the block early and pose as
instructions. `format_block` writes the
memory block (memories in time order under a date line); `pack_by_value` chooses the hits worth their tokens
within a budget, and `with_neighbours` adds the turns around a packed turn while the block still fits. The
vector stage and the benchmarks inject through these same functions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from helpers import prompts
from helpers.prompts import BLOCK_TAG, data_block, neutralise_tags
from helpers.retrieval.schema import Hit

if TYPE_CHECKING:  # pragma: no cover
    from helpers.retrieval.index import MemoryIndex

__all__ = [
    "BLOCK_TAG",
    "neutralise_tags",
    "block_line",
    "day_label",
    "format_block",
    "Packing",
    "relevance",
    "in_context",
    "pack_by_value",
    "with_neighbours",
    "MIN_SIMILARITY",
    "above_floor",
]

# The absolute relevance floor: a memory whose embedding cosine to the question is below this is never sent,
# whatever room the budget has (with the local MiniLM, noise such as an unrelated question or the model's own
# "I don't know that" scores -0.03..0.13). A shared word does not lift a hit over it: a lexical match alone is too
# weak a sign ("book" in a bookshop question). Hits without a cosine (lexical mode) are not judged by it.
# Chosen on tuning data only (`python -m helpers.bench floor`, helpers.bench.longmem.floor: vector stage, 2,000
# tokens, local MiniLM, offline): the highest floor at which no question loses recall on both tuning sets.
# Re-chosen on 2026-12-01 at ed2d6a8, once questions were embedded without the conversation's names
# (helpers.retrieval.names: cosines no longer carry the shared name, so they are lower), floors -1 to 0.12:
# generated corpus, tune split (87 questions): 83.9% with no floor, 85.1% from 0.02 to 0.12 (less noise leaves
# room); LoCoMo tune part (385 questions): 87.5% with no floor, 87.6% up to 0.10, 0.11 loses three questions
# (87.2%). (Before the names change: 0.11, chosen the same way at d96209e.) Re-checked at d2401f5, once BM25 read
# each turn with its neighbours' words (helpers.retrieval.cache): generated tune split, no question loses recall
# up to 0.12 (85.1%; 80.5% with no floor); LoCoMo tune part, 0.10 has the best mean of every floor (88.6%; 88.5%
# with none) but two questions lose recall to it (0.05: one, 0.08: two), so the rule alone would now say 0.00,
# which costs 2.3 points on the generated split. Kept at 0.10: not moved, and the trade stated here. Voyage's
# cosines sit on another scale: not tuned for it.
MIN_SIMILARITY = 0.10


@dataclass(frozen=True)
class Packing:
    """How hits are chosen for a budget: value per token^cost_power, a relevance floor, neighbour expansion."""

    cost_power: float = 0.0  # 0: best first (tuned on real conversations); 1: by value per token, which
    #                                packs cheap chit-chat ("Thanks!") before the long turn that holds the answer
    min_relevance: float = 0.0  # skip hits below this share of the best hit's relevance
    context: float = 0.3  # a turn's value gains this share of its best neighbouring turn's (tuned)
    neighbours: int = 0  # turns before/after a hit to add when budget is left (0: none; tuned)
    neighbour_value: float = 0.5  # a neighbour's value as a share of its hit's
    min_similarity: float = MIN_SIMILARITY  # absolute floor on a hit's cosine to the question (see MIN_SIMILARITY)


def above_floor(hit: Hit, floor: float) -> bool:
    """True when `hit` may be sent: its cosine to the question is at least `floor` (or it has no cosine)."""
    return hit.similarity is None or hit.similarity >= floor


def relevance(hits: list[Hit]) -> list[float]:
    """Each hit's value in (0, 1]: the score it was ranked by (in hybrid mode the fusion of BM25 and cosine, so
    a turn that shares the question's rare words counts, not only its cosine), relative to the best."""
    raw = [h.score for h in hits]
    top = max((r for r in raw if r is not None and r > 0), default=0.0)
    return [max(r, 0.0) / top if top else 0.0 for r in raw]


def in_context(hits: list[Hit], values: list[float], share: float) -> list[float]:
    """Each turn's value plus `share` of the better of the turns just before and after it (when those are
    candidates too): an answer turn sits beside the turn that matches the question ("Where did you go?" →
    "Paris!"), so a turn between two relevant ones outranks a lone match. Facts keep their value."""
    if not share:
        return list(values)
    at = {
        ((h.source or {}).get("session_id"), (h.source or {}).get("seq")): v
        for h, v in zip(hits, values)
        if h.kind == "episode"
    }
    out = []
    for hit, value in zip(hits, values):
        sid, seq = (hit.source or {}).get("session_id"), (hit.source or {}).get("seq")
        near = (
            max((at.get((sid, seq + step), 0.0) for step in (-1, 1)), default=0.0)
            if hit.kind == "episode" and seq is not None
            else 0.0
        )
        out.append(value + share * near)
    return out


def block_line(hit: Hit) -> str:
    """A memory's text on one line, its tags neutralised (what the block shows under its date line)."""
    return neutralise_tags(" ".join(hit.text.split()))


def _date(hit: Hit) -> datetime | None:
    return hit.created_at if hit.kind == "episode" else (hit.updated_at or hit.created_at)


def day_label(when: datetime | None) -> str:
    """`Monday 8 May 2023` (or `undated`)."""
    return f"{when:%A} {when.day} {when:%B %Y}" if when else "undated"


def _header(hit: Hit, session_id: str | None, since_seq: int | None) -> str:
    here = (
        session_id is not None
        and (hit.source or {}).get("session_id") == session_id
        and (since_seq is None or ((hit.source or {}).get("seq") or 0) >= since_seq)
    )
    return f"[{day_label(_date(hit))}{' · earlier in this conversation' if here else ''}]"


def format_block(hits: list[Hit], *, session_id: str | None = None, since_seq: int | None = None) -> str:
    """The system-prompt block: memories in time order under a date line (marked as data; "" for none).

    A memory from `session_id` at or after `since_seq` is marked "earlier in this conversation".
    """
    if not hits:
        return ""
    far = datetime.min.replace(tzinfo=timezone.utc)
    ordered = sorted(
        hits,
        key=lambda h: (
            _date(h) or far,
            (h.source or {}).get("session_id") or "",
            (h.source or {}).get("seq") or 0,
            h.id,
        ),
    )
    lines, last = [], None
    for hit in ordered:
        header = _header(hit, session_id, since_seq)
        if header != last:
            lines.append(header)
            last = header
        lines.append(block_line(hit))
    return data_block(prompts.MEMORY_OPEN, "\n".join(lines), prompts.MEMORY_CLOSE)  # checked whole, as read


def pack_by_value(
    hits: list[Hit],
    budget_tokens: int,
    count: Callable[[str], int],
    *,
    packing: Packing = Packing(),
    values: list[float] | None = None,
    session_id: str | None = None,
    since_seq: int | None = None,
) -> list[Hit]:
    """The most valuable hits that fit: greedy by value / tokens**cost_power (default 0: best first), then
    verified; a line said twice (same words, any case) is packed once.

    `count(format_block(result)) <= budget_tokens` always holds (dropping the least valuable when BPE is
    not additive). Value defaults to `relevance(hits)` in context (`in_context`); a hit's cost is its line plus its
    date line.
    """
    if budget_tokens <= 0 or not hits:
        return []
    values = in_context(hits, relevance(hits), packing.context) if values is None else values
    floor = packing.min_relevance * max(values, default=0.0)
    frame = count(prompts.MEMORY_OPEN + prompts.MEMORY_CLOSE)
    costs = [count(block_line(h)) + 1 for h in hits]
    header_cost = count(_header(hits[0], session_id, since_seq)) + 1
    order = sorted(range(len(hits)), key=lambda i: -values[i] / max(costs[i], 1) ** packing.cost_power)
    used, chosen, days, seen = frame, [], set(), set()
    for i in order:
        if values[i] <= 0 or values[i] < floor or not above_floor(hits[i], packing.min_similarity):
            continue
        same = " ".join(block_line(hits[i]).lower().split())
        if same in seen:  # the same words said again add nothing (chit-chat repeats); the best-valued copy stays
            continue
        day = _header(hits[i], session_id, since_seq)
        cost = costs[i] + (0 if day in days else header_cost)
        if used + cost <= budget_tokens:
            chosen.append(i)
            days.add(day)
            seen.add(same)
            used += cost
    chosen.sort(key=lambda i: -values[i])
    result = [hits[i] for i in chosen]
    while result and count(format_block(result, session_id=session_id, since_seq=since_seq)) > budget_tokens:
        result.pop()
    return result


def with_neighbours(
    index: MemoryIndex,
    user_id: str,
    packed: list[Hit],
    budget_tokens: int,
    count: Callable[[str], int],
    *,
    packing: Packing = Packing(),
    exclude: set[tuple] = frozenset(),
    session_id: str | None = None,
    since_seq: int | None = None,
) -> list[Hit]:
    """Add the turns just before/after packed turn memories while the block still fits (best hits first)."""
    if packing.neighbours <= 0 or not packed:
        return packed
    have = {((h.source or {}).get("session_id"), (h.source or {}).get("seq")) for h in packed}
    wanted: list[tuple] = []
    for hit in packed:  # best first
        sid, seq = (hit.source or {}).get("session_id"), (hit.source or {}).get("seq")
        if hit.kind != "episode" or seq is None:
            continue
        for step in range(1, packing.neighbours + 1):
            for key in ((sid, seq - step), (sid, seq + step)):
                if key not in have and key not in exclude and key not in wanted:
                    wanted.append(key)
    if not wanted:
        return packed
    found = index.episodes_at(user_id, set(wanted))
    result = list(packed)
    used = count(format_block(result, session_id=session_id, since_seq=since_seq))
    days = {_header(h, session_id, since_seq) for h in result}
    for key in wanted:  # add by estimate (line + newline, + a date line when new), verify once at the end
        hit = found.get(key)
        if hit is None:
            continue
        day = _header(hit, session_id, since_seq)
        cost = count(block_line(hit)) + 1 + (0 if day in days else count(day) + 1)
        if used + cost <= budget_tokens:
            result.append(hit)
            days.add(day)
            used += cost
    while (
        len(result) > len(packed)
        and count(format_block(result, session_id=session_id, since_seq=since_seq)) > budget_tokens
    ):
        result.pop()  # BPE is not exactly additive: drop the last neighbours added
    return result
