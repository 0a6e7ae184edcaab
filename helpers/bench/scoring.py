"""Is the answer in the request? Whole-word, case-insensitive matching of gold answers in what the model would read. Tools for 07_elephant, section "Three memories, one score".

A substring test says "teal" is in "steal"; here an answer counts only where it stands as words of its own
(apostrophes, hyphens and punctuation around it are fine; whitespace inside it may differ).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

__all__ = [
    "request_text",
    "mentions",
    "answer_in_request",
    "gold_in_request",
    "current_in_request",
    "gold_current_in_request",
    "score",
]


def request_text(request: dict) -> str:
    """Everything the model would read in a Messages API request: system, then every message's content."""
    system = request.get("system") or ""
    if not isinstance(system, str):
        system = json.dumps(system, ensure_ascii=False)
    parts = [system]
    for message in request.get("messages", []):
        content = message["content"]
        parts.append(content if isinstance(content, str) else json.dumps(content, ensure_ascii=False))
    return "\n".join(parts)


@lru_cache(maxsize=4096)
def _pattern(answer: str) -> re.Pattern:
    words = [re.escape(w) for w in answer.split()]
    if not words:
        raise ValueError("an answer must contain at least one non-space character")
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def mentions(text: str, answer: str) -> bool:
    """Whether `answer` occurs in `text` as whole words, ignoring case: "teal" is not in "steal"."""
    return _pattern(answer.strip()).search(text) is not None


def answer_in_request(request: dict, answer: str) -> bool:
    """Whether `answer` appears (whole words, any case) anywhere the model would read: system or messages."""
    return mentions(request_text(request), answer)


def gold_in_request(request: dict, gold: list[list[str]]) -> bool:
    """Every group of gold answers has at least one member in the request (a multi-hop answer needs all its parts)."""
    text = request_text(request)
    return all(any(mentions(text, answer) for answer in group) for group in gold)


def current_in_request(request: dict, current: str, stale: list[str] | tuple[str, ...] = ()) -> bool:
    """Supersession-aware: the current value is in the request and no value it replaced is.

    Where a newer value exists ("I moved to Denver" after "I live in Portland"), a request that carries the
    stale value beside the current one counts as a miss: the model is handed two answers and may pick the old
    one, so `answer_in_request` would over-count it as recalled."""
    text = request_text(request)
    return mentions(text, current) and not any(mentions(text, old) for old in stale)


def gold_current_in_request(request: dict, gold: list[list[str]], stale: list[str] | tuple[str, ...] = ()) -> bool:
    """`gold_in_request`, with every stale value (one replaced by a newer one) turning a hit into a miss."""
    text = request_text(request)
    return gold_in_request(request, gold) and not any(mentions(text, old) for old in stale)


def score(request_for, questions, client, model: str) -> tuple[int, float, int]:
    """One memory design's score on (kind, question, expected answer) triples: how many requests carry the answer
    (`answer_in_request`), and the mean and largest request in tokens (`count_tokens` of system + messages).
    `request_for(question)` is the request the model answers that question from."""
    from helpers.tokens import count_request_tokens

    requests = [(request_for(q), a) for _kind, q, a in questions]
    found = sum(answer_in_request(r, a) for r, a in requests)
    tokens = [count_request_tokens(client, model, r["system"], r["messages"]) for r, _ in requests]
    return found, sum(tokens) / len(tokens), max(tokens)
