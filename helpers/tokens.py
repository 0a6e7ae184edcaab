"""Token counting in one place: `usage`, `messages.count_tokens`, and the local BPE. Taught in 03_context_window_overflow, section 'Tokens per message'."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass

import anthropic

__all__ = [
    "count_request_tokens",
    "request_base_tokens",
    "per_message_tokens",
    "message_tokens",
    "request_counter",
    "text_tokens",
    "whole_context_counts",
    "local_tokens",
    "text_counter",
    "chars_over_four",
    "DriftRow",
    "drift_table",
    "SAMPLE_TEXTS",
]


def _clean(messages: list[dict]) -> list[dict]:
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def count_request_tokens(client: anthropic.Anthropic, model: str, system: str | None, messages: list[dict]) -> int:
    """Input tokens of a request, counted by the model (`messages.count_tokens`, live or offline)."""
    kwargs = {"system": system} if system else {}
    return client.messages.count_tokens(model=model, messages=_clean(messages), **kwargs).input_tokens


def request_base_tokens(client: anthropic.Anthropic, model: str, system: str | None) -> int:
    """The fixed part of a request: framing + system prompt + the first message's framing.

    Measured as the count of a request whose only message is "." minus that one token.
    """
    return count_request_tokens(client, model, system, [{"role": "user", "content": "."}]) - 1


def request_counter(client: anthropic.Anthropic, model: str, system: str | None) -> Callable[[list[dict]], int]:
    """`count(messages)`: the input tokens of a request holding these messages; `count([])` is its fixed base."""

    def count(messages: list[dict]) -> int:
        if not messages:
            return request_base_tokens(client, model, system)
        return count_request_tokens(client, model, system, messages)

    return count


def message_tokens(messages: list[dict], count: Callable[[list[dict]], int]) -> list[int]:
    """Each message's own tokens: `count(messages[:i + 1]) - count(messages[:i])`, differences of prefix counts
    (`count([])` is the request's fixed base). The learner writes it in 03_context_window_overflow."""
    counts = [count(messages[:i]) for i in range(len(messages) + 1)]
    return [after - before for before, after in zip(counts, counts[1:])]


def per_message_tokens(client: anthropic.Anthropic, model: str, system: str | None, messages: list[dict]) -> list[int]:
    """Each message's own tokens, from differences of consecutive prefix counts (no double counting).

    `sum(result) + request_base_tokens(...) == count_request_tokens(...)` for the whole list.
    """
    return message_tokens(messages, request_counter(client, model, system))


def whole_context_counts(
    client: anthropic.Anthropic, model: str, system: str | None, messages: list[dict]
) -> list[int]:
    """The *wrong* per-message numbers: the whole context's count stored on each message (shown in 03)."""
    return [count_request_tokens(client, model, system, messages[: i + 1]) for i in range(len(messages))]


def text_tokens(client: anthropic.Anthropic, model: str, text: str) -> int:
    """Tokens of `text` as the model counts them (two `count_tokens` calls): the counter to use live."""
    return count_request_tokens(client, model, None, [{"role": "user", "content": text}]) - request_base_tokens(
        client, model, None
    )


@functools.lru_cache(maxsize=65536)  # a long history counts the same messages every turn
def local_tokens(text: str) -> int:
    """Tokens of `text` by the local BPE (the Claude-2 vocabulary in `anthropic-tokenizer`): an offline count.

    The offline model counts with it; it is close to, but not, what a live Claude model counts."""
    from helpers.offline.bpe import count_text_tokens  # loaded only when asked for: live code never needs it

    return count_text_tokens(text)


def text_counter(
    client: anthropic.Anthropic, live: Callable[[str], int], cache_size: int = 4096
) -> Callable[[str], int]:
    """`text -> tokens` for `client`, chosen once: for the offline model its own tokenizer (`local_tokens`, the
    numbers its `count_tokens` gives, without a round trip); live, `live` (a `count_tokens` call) cached per text."""
    from helpers.llm import is_offline  # here, not at import: importing tokens never loads the offline model

    if is_offline(client):
        return local_tokens
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            if len(cache) >= cache_size:
                cache.clear()
            cache[text] = live(text)
        return cache[text]

    return count


def chars_over_four(text: str) -> int:
    """The common estimate `len(text) / 4`, rounded — shown only to measure how far it drifts."""
    return round(len(text) / 4)


SAMPLE_TEXTS: dict[str, str] = {
    "chat": "Hey Scout! We land at LAX on Friday around 3pm. Is it realistic to get to Santa Monica "
    "for sunset, or should we just head to the hotel in Silver Lake and grab tacos nearby?",
    "code": "def trim(window, budget):\n    kept, total = [], 0\n    for ex in reversed(group(window)):\n"
    "        t = sum(m['tokens'] for m in ex)\n        if kept and total + t > budget:\n"
    "            break\n        kept[:0], total = ex, total + t\n    return kept\n",
    "json": json.dumps(
        {
            "session_id": "9f1c2e7a",
            "version": 42,
            "window": [{"role": "user", "tokens": 17, "seq": 81}, {"role": "assistant", "tokens": 64, "seq": 82}],
            "retention": 1.0,
        }
    ),
    "non-English": "東京で一番おいしいラーメン屋はどこですか？ Где лучше всего поесть в Лос-Анджелесе? "
    "¿Cuál es la mejor playa para ver el atardecer?",
    "numbers": "Flight UA1432 departs 2026-12-18 07:45 from gate 71B; confirmation code QX7-55K-9021.",
}


@dataclass(frozen=True)
class DriftRow:
    """One row of the len/4 drift table: the estimate against the tokenizer's count."""

    kind: str
    chars: int
    estimate: int
    tokens: int

    @property
    def drift_pct(self) -> float:
        return 100.0 * (self.estimate - self.tokens) / self.tokens


def drift_table(samples: dict[str, str] | None = None, counter=local_tokens) -> list[DriftRow]:
    """How far `len(text)/4` lands from real token counts, per kind of text."""
    samples = samples or SAMPLE_TEXTS
    return [DriftRow(kind, len(text), chars_over_four(text), counter(text)) for kind, text in samples.items()]
