"""Fold pending turns into the summary within a bound; what cannot be folded is marked unsummarised. Taught in further/03_summary_internals, section 'What the helpers add'."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import anthropic

from helpers.conversation import group_exchanges
from helpers.memory.summary import SummaryResult

__all__ = [
    "PENDING_MAX_TOKENS",
    "PENDING_MAX_COUNT",
    "is_retryable",
    "is_too_long",
    "take_within",
    "FoldOutcome",
    "fold_pending",
]

PENDING_MAX_TOKENS = 4000  # one summary call never reads more than this many tokens of turns
PENDING_MAX_COUNT = 40  # ... nor more than this many messages
_RETRYABLE_STATUS = frozenset({408, 409, 429})

Merge = Callable[[str, list[dict]], SummaryResult]


def is_retryable(err: BaseException) -> bool:
    """True for errors a later attempt can fix (network, timeout, 408/409/429, 5xx); False for 400/401/403/404/413/422."""
    if isinstance(err, anthropic.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(err, anthropic.APIStatusError):
        return err.status_code in _RETRYABLE_STATUS or err.status_code >= 500
    return False


def is_too_long(err: BaseException) -> bool:
    """True when the request itself was too large for the model (a shorter input may succeed)."""
    if not isinstance(err, anthropic.APIStatusError):
        return False
    return err.status_code == 413 or (err.status_code == 400 and "too long" in str(getattr(err, "message", err)))


def _tokens(message: dict) -> int:
    return int(message.get("tokens") or 0)


def take_within(messages: list[dict], max_tokens: int, max_count: int) -> tuple[list[dict], list[dict]]:
    """The oldest whole exchanges within both bounds (at least one exchange), and the rest."""
    head: list[dict] = []
    used = 0
    for group in group_exchanges(list(messages)):
        cost = sum(_tokens(m) for m in group)
        if head and (used + cost > max_tokens or len(head) + len(group) > max_count):
            break
        head += group
        used += cost
    return head, list(messages[len(head) :])


@dataclass
class FoldOutcome:
    """What folding pending turns did: the new summary (if any), and where every input message went."""

    summary: str
    summary_tokens: int
    merged: list[dict] = field(default_factory=list)  # folded into the summary
    pending: list[dict] = field(default_factory=list)  # kept for a later attempt (within the bound)
    unsummarised: list[dict] = field(default_factory=list)  # given up on: only in the logs (--rebuild recovers)
    facts: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    calls: int = 0
    error: str | None = None
    warning: str | None = None
    results: list[SummaryResult] = field(default_factory=list)

    @property
    def changed_summary(self) -> bool:
        return bool(self.merged)

    @property
    def retention(self) -> float | None:
        return (
            None
            if not self.results or all(r.retention is None for r in self.results)
            else (1.0 if not self.facts else (len(self.facts) - len(self.missing)) / len(self.facts))
        )


def _describe(err: BaseException) -> str:
    return f"{err.__class__.__name__}: {getattr(err, 'message', err)}"[:300]


def fold_pending(
    merge: Merge,
    summary: str,
    summary_tokens: int,
    messages: list[dict],
    *,
    max_tokens: int = PENDING_MAX_TOKENS,
    max_count: int = PENDING_MAX_COUNT,
    max_chunks: int | None = 1,
) -> FoldOutcome:
    """Merge `messages` into `summary` in chunks within the bound (at most `max_chunks` summary merges).

    A prompt-too-long error or a summary cut at max_tokens is retried with half the input; a retryable
    error keeps the rest pending (up to the bound); a non-retryable one (404 model, 401/403, ...) and
    anything past the bound is returned as `unsummarised`, never retried forever.
    """
    out = FoldOutcome(summary, summary_tokens)
    rest = list(messages)
    limit_tokens, limit_count = max_tokens, max_count
    chunks = 0
    while rest and (max_chunks is None or chunks < max_chunks):
        head, tail = take_within(rest, limit_tokens, limit_count)
        smaller = len(group_exchanges(head)) > 1
        try:
            result = merge(out.summary, head)
        except anthropic.APIError as err:
            out.calls += 1
            if is_too_long(err) and smaller:
                limit_tokens, limit_count = max(1, limit_tokens // 2), max(2, limit_count // 2)
                continue
            out.error = _describe(err)
            if not is_retryable(err):
                out.unsummarised += head if is_too_long(err) else rest
                rest = tail if is_too_long(err) else []
                out.warning = f"summary merge failed and will not be retried: {out.error}"
                if is_too_long(err):
                    continue
            break
        out.calls += result.calls
        if getattr(result, "truncated", False) and smaller:  # cut at max_tokens: retry with less to summarise
            limit_tokens, limit_count = max(1, limit_tokens // 2), max(2, limit_count // 2)
            continue
        if getattr(result, "truncated", False):
            out.warning = "the summary was cut at its max_tokens (SUMMARY_MAX_TOKENS); raise it to keep more"
        out.summary, out.summary_tokens = result.summary, result.tokens
        out.merged += head
        out.facts += result.facts
        out.missing += result.missing
        out.results.append(result)
        rest = tail
        chunks += 1
    keep, over = take_within(rest, max_tokens, max_count) if rest else ([], [])
    if over and sum(_tokens(m) for m in keep) > max_tokens:  # a single exchange over the bound is not kept
        keep, over = [], rest
    out.pending = keep
    out.unsummarised += over
    if over and not out.warning:
        out.warning = (
            f"{len(out.unsummarised)} message(s) past the pending bound ({max_tokens} tokens / {max_count} "
            "messages) were left out of the summary; they are in the logs: run --rebuild to recover them"
        )
    return out
