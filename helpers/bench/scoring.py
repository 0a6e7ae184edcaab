"""Is the answer in the request? Whole-word, case-insensitive matching of gold answers in what the model would read. Tools for 06_long_conversations, section 'One context budget, split by evidence'.

A substring test says "teal" is in "steal"; here an answer counts only where it stands as words of its own
(apostrophes, hyphens and punctuation around it are fine; whitespace inside it may differ).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

__all__ = ["request_text", "mentions", "answer_in_request", "gold_in_request"]


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
