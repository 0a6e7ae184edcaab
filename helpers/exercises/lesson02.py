"""Tools: the exercises of core lesson 02 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES", "Recorder"]


class Recorder:
    """A stand-in for `ask` in the checks: keeps a copy of every list it was sent, answers "reply 1", "reply 2", ..."""

    def __init__(self) -> None:
        self.sent: list[list[dict]] = []

    def __call__(self, messages: list[dict]) -> str:
        self.sent.append([dict(m) for m in messages])
        return f"reply {len(self.sent)}"


U1 = {"role": "user", "content": "My favorite color is teal."}
A1 = {"role": "assistant", "content": "reply 1"}
U2 = {"role": "user", "content": "What is my favorite color?"}
A2 = {"role": "assistant", "content": "reply 2"}


def _turns(chat_turn, n: int) -> tuple[list[dict], Recorder, list]:
    history: list[dict] = []
    ask = Recorder()
    replies = [chat_turn(history, text, ask) for text in (U1["content"], U2["content"])[:n]]
    return history, ask, replies


EXERCISES: list[Exercise] = [
    Exercise(
        id="02.chat_turn",
        title="one turn of the history list",
        fallback="helpers.conversation:chat_turn",
        hint="append the user's message, call ask(history) with the whole list, append the reply as 'assistant', "
        "return the reply.",
        cases=(
            Case(
                "returns the model's reply",
                drive=lambda fn: _turns(fn, 1)[2][0],
                expect="reply 1",
                shown_input="chat_turn([], 'My favorite color is teal.', ask)   # ask answers 'reply 1'",
            ),
            Case(
                "after one turn the list holds the user's message and the reply",
                drive=lambda fn: _turns(fn, 1)[0],
                expect=[U1, A1],
                shown_input="history = []; chat_turn(history, 'My favorite color is teal.', ask); history",
            ),
            Case(
                "the second call sends the WHOLE list, the new question last",
                drive=lambda fn: _turns(fn, 2)[1].sent[-1],
                expect=[U1, A1, U2],
                shown_input="two turns on one list; what the second ask(...) received",
            ),
            Case(
                "after two turns the list holds four messages, in order",
                drive=lambda fn: _turns(fn, 2)[0],
                expect=[U1, A1, U2, A2],
                shown_input="two turns on one list; history",
            ),
        ),
    )
]
