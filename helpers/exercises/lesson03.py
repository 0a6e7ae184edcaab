"""Tools: the exercises of core lesson 03 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES", "toy_count"]

BASE = 10  # the toy request's fixed base: framing + system prompt


def toy_count(messages: list[dict]) -> int:
    """A stand-in for `count_tokens`: 10 tokens of fixed base, 3 of framing per message, one per character."""
    return BASE + sum(3 + len(m["content"]) for m in messages)


HI = {"role": "user", "content": "hi"}
HELLO = {"role": "assistant", "content": "hello"}
ASK = {"role": "user", "content": "where is the pier?"}


class Calls:
    """`toy_count` that remembers every list it was asked to count (to see that the function counts prefixes)."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def __call__(self, messages: list[dict]) -> int:
        self.asked.append(len(messages))
        return toy_count(messages)


EXERCISES: list[Exercise] = [
    Exercise(
        id="03.message_tokens",
        title="each message's own tokens, from prefix counts",
        fallback="helpers.tokens:message_tokens",
        hint="message i costs count(messages[:i+1]) - count(messages[:i]); count([]) is the fixed base, which "
        "belongs to no message.",
        cases=(
            Case(
                "one message: its count without the fixed base",
                args=([HI], toy_count),
                expect=[5],
                shown_input="message_tokens([hi], count)   # count([]) == 10, count([hi]) == 15",
            ),
            Case(
                "three messages: each one's own tokens, not the running total",
                args=([HI, HELLO, ASK], toy_count),
                expect=[5, 8, 21],
                shown_input="message_tokens([hi, hello, ask], count)   # count of the three prefixes: 15, 23, 44",
            ),
            Case(
                "the parts add up: sum(result) + count([]) == count(messages)",
                make=lambda: (([HELLO, ASK, HI, HELLO], toy_count), {}),
                test=lambda got: sum(got) + toy_count([]) == toy_count([HELLO, ASK, HI, HELLO]) and len(got) == 4,
                expect_text="four numbers whose sum is 56 - 10 = 46",
                shown_input="message_tokens([hello, ask, hi, hello], count)",
            ),
            Case("no messages: an empty list", args=([], toy_count), expect=[]),
            Case(
                "it asks `count`, the model's counter, instead of guessing from the text",
                drive=lambda fn: (lambda c: (fn([HI, HELLO], c), c.asked)[1])(Calls()),
                test=lambda asked: sorted(set(asked)) == [0, 1, 2],
                expect_text="count called on the prefixes of 0, 1 and 2 messages",
                shown_input="message_tokens([hi, hello], count)   # which lists did it count?",
            ),
        ),
    )
]
