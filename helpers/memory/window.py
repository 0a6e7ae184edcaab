"""Exchange-aware trimming of chat history to a token budget. Taught in 04_bounded_memory_mongodb, section 'The window trims by whole exchanges'."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from numbers import Integral
from typing import Any

from helpers.conversation import Message, group_exchanges, starts_exchange

__all__ = ["TokensOf", "stored_tokens", "window_tokens", "trim", "trim_in_chunks"]

TokensOf = Callable[[Mapping[str, Any]], int]


def stored_tokens(message: Mapping[str, Any]) -> int:
    """The token count stored on a message under 'tokens' (the default `tokens_of`). Taught in 04_bounded_memory_mongodb."""
    try:
        return message["tokens"]
    except KeyError:
        raise KeyError(
            "message has no 'tokens' key; store each message's own token count as 'tokens' "
            "or pass tokens_of=<function(message) -> int>"
        ) from None


def _count(tokens_of: TokensOf, message: Mapping[str, Any]) -> int:
    """One message's token count, checked to be a non-negative whole number."""
    n = tokens_of(message)
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 0:
        raise ValueError(f"tokens_of returned {n!r} for a {message.get('role')!r} message; it must return an int >= 0")
    return int(n)


def window_tokens(messages: Sequence[Message], tokens_of: TokensOf = stored_tokens) -> int:
    """Total tokens of a window: the sum of each message's own count. Taught in 04_bounded_memory_mongodb."""
    return sum(_count(tokens_of, m) for m in messages)


def trim(
    messages: Sequence[Message], budget: int, tokens_of: TokensOf = stored_tokens
) -> tuple[list[Message], list[Message]]:
    """Trim history to a token budget by whole exchanges; returns (kept, dropped). Taught in 04_bounded_memory_mongodb.

    The newest exchange is always kept, even alone over budget. Older exchanges are added
    newest-first while the total stays within `budget`, stopping at the first that does not fit,
    so `kept` is a contiguous suffix and `dropped + kept == messages` (same objects, same order).
    A leading group with no user turn (e.g. an assistant greeting) is always dropped when a real
    exchange follows it, so `kept` starts with a user turn whenever the input has one.
    """
    if isinstance(budget, bool) or not isinstance(budget, Integral):
        raise TypeError(f"budget must be an int number of tokens, got {type(budget).__name__}")
    if budget < 0:
        raise ValueError(f"budget must be >= 0 tokens, got {budget}; set WINDOW_BUDGET_TOKENS to a positive number")
    messages = list(messages)
    if not messages:
        return [], []
    groups = group_exchanges(messages)
    costs = [window_tokens(group, tokens_of) for group in groups]
    oldest_allowed = 1 if len(groups) > 1 and not starts_exchange(groups[0][0]) else 0
    start = len(groups) - 1
    total = costs[start]
    while start > oldest_allowed and total + costs[start - 1] <= budget:
        start -= 1
        total += costs[start]
    cut = sum(len(group) for group in groups[:start])
    return messages[cut:], messages[:cut]


def trim_in_chunks(
    messages: Sequence[Message], high: int, low: int, tokens_of: TokensOf = stored_tokens
) -> tuple[list[Message], list[Message]]:
    """Trim only when the window is over `high` tokens, and then down to `low`; returns (kept, dropped). Taught in 04_bounded_memory_mongodb, section 'Cache-aware bounded memory'.

    Between two trims the window only grows at its end, so the request's prefix (system prompt, summary and
    the older messages) stays byte-identical for many turns and the prompt cache can serve it; a trim drops
    a whole chunk at once, folded into the summary in one call. `trim(messages, high)` trims a little every turn.
    """
    if isinstance(low, bool) or not isinstance(low, Integral) or not 0 <= low <= high:
        raise ValueError(f"low must be a whole number of tokens between 0 and high ({high}), got {low!r}")
    over = window_tokens(messages, tokens_of) > high
    return trim(messages, low if over else high, tokens_of)
