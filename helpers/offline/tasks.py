"""Plumbing: the helper tasks the offline model answers: rolling summary, fact extraction, fact reconciliation.

Each task is recognised by the first words of its system prompt (helpers.prompts). Summary returns
prose; extraction and reconciliation return a dict, which the model sends as a `tool_use` block when the
request forces a tool (or as JSON text when it does not).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from helpers import prompts
from helpers.offline.fact_rules import clash, facts_from_turns, parse_turn_lines, repeats, same_fact
from helpers.offline.language import content_stems, proper_names, sentences, words

__all__ = ["TASKS", "summarise", "extract", "reconcile", "section"]


def section(text: str, tag: str) -> str:
    """The inside of `<tag>…</tag>` in `text` ('' when absent)."""
    m = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.S)
    return m.group(1).strip() if m else ""


def _salience(fact: str, order: int, count: Callable[[str], int]) -> float:
    """Names and numbers make a fact worth its tokens; short facts beat long ones; newer facts matter a little more."""
    toks = words(fact)
    specific = len(proper_names(fact)) + sum(any(ch.isdigit() for ch in w) for w in toks)
    return (1.0 + 0.25 * min(specific, 2)) / max(count(fact), 1) ** 0.5 + 0.001 * order


def _fewest_drops(kept: list[str], ranked: list[int], max_tokens: int, count: Callable[[str], int]) -> int:
    """The fewest facts to drop, least salient first (`ranked`), so the rest fits `max_tokens`: found from the
    pieces' own counts, then checked on the joined text (a few counts, not one per fact)."""

    def fits(k: int) -> bool:
        gone = set(ranked[:k])
        return count(" ".join(kept[j] for j in range(len(kept)) if j not in gone)) <= max_tokens

    sizes = [count(kept[i]) + 1 for i in ranked]
    total, k = sum(sizes), 0
    while k < len(ranked) and total > max_tokens:  # the estimate: a joined text costs about its pieces' sum
        total -= sizes[k]
        k += 1
    while k > 0 and fits(k - 1):  # dropping one fewer still fits
        k -= 1
    while k < len(ranked) and not fits(k):  # not yet within the limit
        k += 1
    return k


def summarise(last_user_text: str, max_tokens: int, count: Callable[[str], int]) -> str:
    """Merge the existing summary with the new turns: the user's statements in third person, newest value wins,
    fitted to `max_tokens` by dropping the least salient facts first (facts in <must_keep> are dropped last)."""
    old = [
        s for s in sentences(section(last_user_text, "existing_summary")) if not s.startswith("Nothing about the user")
    ]
    must = [s.strip() for s in section(last_user_text, "must_keep").splitlines() if s.strip()]
    new = facts_from_turns(parse_turn_lines(section(last_user_text, "new_turns")))
    kept: list[str] = []
    for fact in old + new + must:
        if repeats(fact, kept):
            continue
        kept = [have for have in kept if not clash(fact, have)]
        kept.append(fact)
    must_set = {m for m in must}
    ranked = sorted(range(len(kept)), key=lambda i: (kept[i] in must_set, _salience(kept[i], i, count)))
    drop = _fewest_drops(kept, ranked, max_tokens, count)
    dropped = set(ranked[:drop])
    pieces = [kept[j] for j in range(len(kept)) if j not in dropped]
    return " ".join(pieces) if pieces else "Nothing about the user has been stated yet."


def extract(last_user_text: str) -> dict:
    """Facts stated in one exchange (`User: …` / `Assistant: …` lines)."""
    turns = parse_turn_lines(last_user_text) or [("user", last_user_text)]
    return {"facts": facts_from_turns(turns)}


def reconcile(last_user_text: str) -> dict:
    """Older facts the new fact makes outdated (`replaces`) or repeats (`duplicates`)."""
    new = section(last_user_text, "new_fact")
    replaces: list[int] = []
    duplicates: list[int] = []
    for line in section(last_user_text, "older_facts").splitlines():
        m = re.match(r"^\s*\[?(\d+)[\].:)]?\s+(.*)$", line)
        if not m or not content_stems(m.group(2)):
            continue
        index, old = int(m.group(1)), m.group(2)
        if same_fact(new, old):
            duplicates.append(index)
        elif clash(new, old):
            replaces.append(index)
    return {"replaces": sorted(set(replaces)), "duplicates": sorted(set(duplicates) - set(replaces))}


# marker (start of the task's system prompt) → kind of output
TASKS: list[tuple[str, str]] = [
    (prompts.SUMMARY_TASK[:60], "summary"),
    (prompts.EXTRACTION_TASK[:60], "extract"),
    (prompts.RECONCILE_TASK[:60], "reconcile"),
]
