"""One context budget shared by window, summary and retrieved memories, allocated by evidence. Taught in further/05_long_conversations, section 'One context budget, split by evidence'.

The policy, in order:
1. The newest exchange of the window is always sent (even when it alone is over the budget).
2. Retrieved memories may take up to `share` of the rest: `strong_share` when the best hit is a strong
   match for the question and lies outside the window; `long_share` when the evidence is weak but the
   history is long (at least as many remembered turns outside the stored window as in it: the window
   then shows only a small, recent part of what was said, and the answer is rarely there); else `weak_share`.
3. What memories leave goes to older window exchanges (newest first), then to the summary if it fits.
4. Anything still left goes back to memories.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

from helpers.memory.window import trim

__all__ = ["BudgetPolicy", "Split", "memory_share", "window_suffix", "plan"]


@dataclass(frozen=True)
class BudgetPolicy:
    """The knobs of the allocation; chosen on the tuning half of `python -m helpers.bench longmem`."""

    strong_share: float = 1.0  # memories' share of the rest when the evidence is strong (tuned on real
    #                                 conversations, `bench longmem --data`, tuning part: 0.9 → 1.0, +0.8 points)
    weak_share: float = 0.25  # ... when it is weak and the history fits the window
    long_share: float = 1.0  # ... when it is weak but the history is long (tuned likewise: 0.75 → 1.0)
    strong_similarity: float = 0.45  # cosine of the best hit that counts as strong evidence

    def __post_init__(self):
        for name in ("strong_share", "weak_share", "long_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {getattr(self, name)!r}")


@dataclass
class Split:
    """Where the context budget went for one request (tokens): the widget's gauge shows it."""

    budget: int
    window: int = 0
    summary: int = 0
    memories: int = 0
    memory_cap: int = 0
    window_messages: int = 0
    summary_sent: bool = False
    evidence: str = "none"

    def to_dict(self) -> dict:
        return asdict(self)


def memory_share(
    policy: BudgetPolicy, best_similarity: float | None, lexical_match: bool, long_history: bool = False
) -> tuple[float, str]:
    """Memories' share of the budget left after the last exchange, and the evidence it was based on."""
    weak = (policy.long_share, "long history") if long_history else (policy.weak_share, "weak")
    if best_similarity is None and not lexical_match:
        return weak
    strong = (best_similarity or 0.0) >= policy.strong_similarity or (
        lexical_match and (best_similarity or 0.0) >= policy.strong_similarity / 2
    )
    return (policy.strong_share, "strong") if strong else weak


def window_suffix(window: list[dict], tokens: int, framing: int = 0) -> list[dict]:
    """The newest whole exchanges of `window` within `tokens` (each message + `framing`); the last exchange always."""
    if not window:
        return []
    return trim(window, max(0, int(tokens)), lambda m: (m.get("tokens") or 0) + framing)[0]


def _cost(messages: list[dict], framing: int) -> int:
    return sum((m.get("tokens") or 0) + framing for m in messages)


def _key(hit) -> tuple:
    source = hit.source or {}
    return source.get("session_id"), source.get("seq")


def plan(
    window: list[dict],
    summary_tokens: int,
    hits: list,
    budget: int,
    *,
    session_id: str,
    block_tokens: Callable[[list], int],
    pack: Callable[[list, int], list],
    expand: Callable[[list, int, set], list] | None = None,
    policy: BudgetPolicy = BudgetPolicy(),
    framing: int = 0,
    remembered: int | None = None,
) -> tuple[list[dict], bool, list, Split]:
    """Allocate `budget` tokens: (window messages to send, send the summary?, memories to send, the split).

    `hits` are ranked candidates; `pack(hits, tokens)` chooses those that fit; `block_tokens(hits)` counts
    the memory block; `expand(packed, tokens, exclude)` may add neighbouring turns. Memories that are
    already in the sent window, by (session_id, seq), are never sent twice. Each window message costs its
    stored tokens plus `framing` (the role markers the API adds around every message). `remembered` is how
    many turns memory holds outside the stored window (the history's length for the `long_share` test);
    without it the candidates outside the window are counted, which a capped candidate list undercounts.
    """
    split = Split(budget=budget)
    last = window_suffix(window, 0, framing)
    last_keys = {(session_id, m.get("seq")) for m in last}
    candidates = [h for h in hits if _key(h) not in last_keys]
    rest = max(0, budget - _cost(last, framing))
    best_sim = max((h.similarity for h in candidates if h.similarity is not None), default=None)
    lexical = any((h.lexical or 0) > 0 for h in candidates)
    stored = {(session_id, m.get("seq")) for m in window}
    outside = sum(_key(h) not in stored for h in candidates) if remembered is None else remembered
    long_history = outside >= max(1, len(window))
    share, split.evidence = memory_share(policy, best_sim, lexical, long_history) if candidates else (0.0, "none")
    split.memory_cap = int(rest * share)

    def fit(packed: list, tokens: int) -> list:  # the block as sent (with its separator) within `tokens`
        while packed and block_tokens(packed) > tokens:
            packed = packed[:-1]  # the least valuable (packers return the best first, additions last)
        return packed

    first = fit(pack(candidates, split.memory_cap), split.memory_cap)
    used = block_tokens(first) if first else 0
    sent = window_suffix(window, budget - used, framing)
    sent_tokens = _cost(sent, framing)
    left = budget - sent_tokens - used
    split.summary_sent = bool(summary_tokens) and summary_tokens <= left
    summary_used = summary_tokens if split.summary_sent else 0
    sent_keys = {(session_id, m.get("seq")) for m in sent}
    candidates = [h for h in candidates if _key(h) not in sent_keys]
    room = max(0, budget - sent_tokens - summary_used)
    packed = pack(candidates, room)
    if expand is not None and packed:
        packed = expand(packed, room, sent_keys)
    packed = fit(packed, room)
    split.window, split.window_messages = sent_tokens, len(sent)
    split.summary, split.memories = summary_used, block_tokens(packed) if packed else 0
    return sent, split.summary_sent, packed, split
