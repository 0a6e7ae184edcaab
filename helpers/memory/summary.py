"""Incremental rolling summary with a retention check. Taught in 04_bounded_memory_mongodb, section 'The rolling summary'."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anthropic

from helpers import prompts
from helpers.conversation import format_turns, reply_text
from helpers.memory.retention import check_retention as _check
from helpers.memory.retention import extract_facts, fact_present
from helpers.prompts import data_block

__all__ = [
    "SummaryResult",
    "summary_request",
    "summary_messages",
    "merge_into_summary",
    "summariser",
    "fact_present",
    "merge_summary",
    "system_with_summary",
]


def summary_messages(old_summary: str, dropped: list[dict], must_keep: list[str] | None = None) -> list[dict]:
    """The summary call's one user message: the existing summary plus only the newly dropped turns."""
    body = f"<existing_summary>\n{old_summary}\n</existing_summary>\n<new_turns>\n{format_turns(dropped)}\n</new_turns>"
    if must_keep:
        body += (
            "\n<must_keep>\n" + "\n".join(must_keep) + "\n</must_keep>\n"
            "Your previous summary lost the facts in <must_keep>; include each of them."
        )
    return [{"role": "user", "content": body}]


def merge_into_summary(old_summary: str, dropped: list[dict], ask: Callable[[list[dict]], str]) -> str:
    """One merge: `ask` the summariser with the old summary and only the dropped turns; return its text, stripped.
    The learner writes it in 04_bounded_memory_mongodb (`merge_summary` adds the retention check)."""
    return ask(summary_messages(old_summary, dropped)).strip()


def summariser(client: anthropic.Anthropic, model: str, max_tokens: int) -> Callable[[list[dict]], str]:
    """The `ask` a merge sends to: one call to `model` with the summary task as its system prompt, the reply capped at
    the summary's size (`max_tokens`); returns the reply's text."""

    def ask(messages: list[dict]) -> str:
        reply = client.messages.create(
            model=model, max_tokens=max_tokens, system=prompts.SUMMARY_TASK, messages=messages
        )
        return reply_text(reply)

    return ask


def summary_request(
    model: str, old_summary: str, dropped: list[dict], max_tokens: int, must_keep: list[str] | None = None
) -> dict:
    """The summary call: the existing summary plus only the newly dropped turns (never the whole transcript)."""
    return {
        "model": model,
        "max_tokens": max_tokens,
        "system": prompts.SUMMARY_TASK,
        "messages": summary_messages(old_summary, dropped, must_keep),
    }


def _record(ledger, purpose: str, message) -> None:
    if ledger is not None:
        ledger.record(purpose, message.model, message.usage)


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
        return {
            "summary": self.summary,
            "tokens": self.tokens,
            "facts": self.facts,
            "missing": self.missing,
            "retention": self.retention,
            "remerged": self.remerged,
            "calls": self.calls,
            "truncated": self.truncated,
        }


def merge_summary(
    client: anthropic.Anthropic,
    model: str,
    old_summary: str,
    dropped: list[dict],
    *,
    max_tokens: int,
    extraction_model: str | None = None,
    ledger=None,
    check_retention: bool = True,
    known_facts: list[str] | None = None,
) -> SummaryResult:
    """Merge `dropped` into `old_summary` with one summary call, then check the value words of every fact the
    summary is responsible for: `known_facts` (from earlier merges) plus the facts stated in `dropped`.
    Lost ones are named in one re-merge. `retention` is None when there was nothing to check; `truncated`
    flags a summary cut at max_tokens. Raises the SDK's errors (helpers.memory.pending decides whether to retry,
    shorten or give up)."""
    reply = client.messages.create(**summary_request(model, old_summary, dropped, max_tokens))
    _record(ledger, "summary", reply)
    summary = reply_text(reply).strip()
    tokens, calls = reply.usage.output_tokens, 1
    truncated = reply.stop_reason == "max_tokens"
    if not check_retention:
        return SummaryResult(summary, tokens, calls=calls, truncated=truncated)
    new = extract_facts(client, extraction_model or model, dropped, ledger)
    calls += 1 if any(m["role"] == "user" for m in dropped) else 0
    facts = list(dict.fromkeys([*(known_facts or []), *new]))
    check = _check(facts, summary)
    remerged = False
    # Re-merge only when this merge lost something (a new fact, or one the old summary still had); facts
    # lost earlier stay counted as lost but do not cost a second call on every later merge.
    if any(f in new or fact_present(f, old_summary) for f in check.lost):
        retry = client.messages.create(**summary_request(model, old_summary, dropped, max_tokens, must_keep=check.lost))
        _record(ledger, "summary", retry)
        calls += 1
        candidate = reply_text(retry).strip()
        second = _check(facts, candidate)
        if len(second.lost) <= len(check.lost):
            summary, tokens, check, remerged = candidate, retry.usage.output_tokens, second, True
            truncated = retry.stop_reason == "max_tokens"
    return SummaryResult(summary, tokens, facts, check.lost, check.score, remerged, calls, truncated)


def system_with_summary(persona: str, summary: str | None) -> str:
    """The request's system prompt: the persona, then the summary clearly marked as data about the past.

    Block tags inside the summary (e.g. a user's injected `</conversation_summary>`, in any look-alike or escaped
    form) are neutralised, so the summary cannot close its block early and pose as instructions."""
    if not summary:
        return persona
    return f"{persona}\n\n{data_block(prompts.SUMMARY_OPEN, summary, prompts.SUMMARY_CLOSE)}"
