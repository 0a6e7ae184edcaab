"""Incremental rolling summary with a retention check. Taught in 04_bounded_memory_mongodb."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import anthropic

from . import prompts
from .conversation import text_of

__all__ = [
    "SummaryResult",
    "format_turns",
    "summary_request",
    "extract_facts",
    "fact_present",
    "merge_summary",
    "system_with_summary",
]

_GENERIC = set(
    "the a an is are was of to in on at and or user user's users their they them has have likes like loves love "
    "lives live works work as name named called favorite favourite color colour is with for from".split()
)


def format_turns(messages: list[dict]) -> str:
    """Messages as plain `User: …` / `Assistant: …` lines (what the summariser and extractor read)."""
    lines = []
    for m in messages:
        who = "User" if m["role"] == "user" else "Assistant"
        lines.append(f"{who}: {' '.join(text_of(m).split())}")
    return "\n".join(lines)


def summary_request(model: str, old_summary: str, dropped: list[dict], max_tokens: int,
                    must_keep: list[str] | None = None) -> dict:
    """The summary call: the existing summary plus only the newly dropped turns (never the whole transcript)."""
    body = (f"<existing_summary>\n{old_summary}\n</existing_summary>\n"
            f"<new_turns>\n{format_turns(dropped)}\n</new_turns>")
    if must_keep:
        body += ("\n<must_keep>\n" + "\n".join(must_keep) + "\n</must_keep>\n"
                 "Your previous summary lost the facts in <must_keep>; include each of them.")
    return {"model": model, "max_tokens": max_tokens, "system": prompts.SUMMARY_TASK,
            "messages": [{"role": "user", "content": body}]}


def _record(ledger, purpose: str, message) -> None:
    if ledger is not None:
        ledger.record(purpose, message.model, message.usage)


def extract_facts(client: anthropic.Anthropic, model: str, messages: list[dict], ledger=None) -> list[str]:
    """Facts the user stated in `messages`, as standalone third-person sentences, via the extraction prompt."""
    if not any(m["role"] == "user" for m in messages):
        return []
    reply = client.messages.create(model=model, max_tokens=400, system=prompts.EXTRACTION_TASK,
                                   messages=[{"role": "user", "content": format_turns(messages)}])
    _record(ledger, "extraction", reply)
    raw = "".join(b.text for b in reply.content if b.type == "text").strip()
    match = re.search(r"\{.*\}", raw, re.S)
    try:
        facts = json.loads(match.group(0) if match else raw).get("facts", [])
    except (ValueError, AttributeError):
        return []
    return [f.strip() for f in facts if isinstance(f, str) and f.strip()]


def _words(text: str) -> list[str]:
    return re.findall(r"[\w$€£'-]+", text.lower())


def fact_present(fact: str, summary: str) -> bool:
    """Whether a fact sentence survives in the summary: its distinctive words (names, numbers) all appear,
    and at least half of its other content words do."""
    have = set(_words(summary))
    raw = re.findall(r"[\w$€£'-]+", fact)
    distinctive = [w.lower() for i, w in enumerate(raw) if (w[0].isupper() and i > 0 and w.lower() not in _GENERIC)
                   or any(ch.isdigit() for ch in w)]
    content = [w for w in _words(fact) if w not in _GENERIC and w not in distinctive]
    if any(w not in have for w in distinctive):
        return False
    if not content:
        return bool(distinctive)
    return sum(w in have for w in content) >= max(1, len(content) / 2)


@dataclass
class SummaryResult:
    """A merged summary with its exact size, retention score and what it covers."""

    summary: str
    tokens: int
    facts: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    retention: float | None = None
    remerged: bool = False
    calls: int = 0
    truncated: bool = False  # the summary call stopped at max_tokens: the summary may be cut off

    def to_dict(self) -> dict:
        return {"summary": self.summary, "tokens": self.tokens, "facts": self.facts, "missing": self.missing,
                "retention": self.retention, "remerged": self.remerged, "calls": self.calls,
                "truncated": self.truncated}


def merge_summary(client: anthropic.Anthropic, model: str, old_summary: str, dropped: list[dict], *,
                  max_tokens: int, extraction_model: str | None = None, ledger=None,
                  check_retention: bool = True) -> SummaryResult:
    """Merge `dropped` into `old_summary` with one summary call; check that the facts stated in `dropped`
    survive, and re-merge once naming any that were lost. `truncated` flags a summary cut at max_tokens.
    Raises the SDK's errors (helpers.pending decides whether to retry, shorten or give up)."""
    reply = client.messages.create(**summary_request(model, old_summary, dropped, max_tokens))
    _record(ledger, "summary", reply)
    summary = "".join(b.text for b in reply.content if b.type == "text").strip()
    tokens, calls = reply.usage.output_tokens, 1
    truncated = reply.stop_reason == "max_tokens"
    if not check_retention:
        return SummaryResult(summary, tokens, calls=calls, truncated=truncated)
    facts = extract_facts(client, extraction_model or model, dropped, ledger)
    calls += 1 if any(m["role"] == "user" for m in dropped) else 0
    missing = [f for f in facts if not fact_present(f, summary)]
    remerged = False
    if missing:
        retry = client.messages.create(**summary_request(model, old_summary, dropped, max_tokens, must_keep=missing))
        _record(ledger, "summary", retry)
        calls += 1
        candidate = "".join(b.text for b in retry.content if b.type == "text").strip()
        still = [f for f in facts if not fact_present(f, candidate)]
        if len(still) <= len(missing):
            summary, tokens, missing, remerged = candidate, retry.usage.output_tokens, still, True
            truncated = retry.stop_reason == "max_tokens"
    retention = 1.0 if not facts else (len(facts) - len(missing)) / len(facts)
    return SummaryResult(summary, tokens, facts, missing, retention, remerged, calls, truncated)


_BLOCK_TAG = re.compile(r"<\s*/?\s*(?:conversation_summary|remembered_memories)\s*>", re.I)


def system_with_summary(persona: str, summary: str | None) -> str:
    """The request's system prompt: the persona, then the summary clearly marked as data about the past.

    Block tags inside the summary (e.g. a user's injected `</conversation_summary>`) are neutralised, so the
    summary cannot close its block early and pose as instructions."""
    if not summary:
        return persona
    summary = _BLOCK_TAG.sub("[tag removed]", summary)
    return f"{persona}\n\n{prompts.SUMMARY_OPEN}{summary}{prompts.SUMMARY_CLOSE}"
