"""Tools: the exercises of core lesson 04 (its notebook in notebooks/solutions/ holds the solutions)."""

from __future__ import annotations

from helpers.exercises.check import Case, Exercise

__all__ = ["EXERCISES", "window"]


def window(*sizes: int) -> list[dict]:
    """Messages alternating user/assistant, named u1, a1, u2, ..., with these token counts."""
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{'ua'[i % 2]}{i // 2 + 1}", "tokens": n}
        for i, n in enumerate(sizes)
    ]


def _names(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages]


def _split(sizes: tuple, cut: int) -> tuple[list[dict], list[dict]]:
    w = window(*sizes)
    return w[cut:], w[:cut]


EXAMPLE = (120, 90, 60, 80)  # u1 a1 | u2 a2
SPLITS = (100, 30, 20, 30, 10, 40)  # u1 a1 | u2 a2 | u3 a3: one more message would fit, a whole exchange would not
GAP = (10, 10, 200, 200, 30, 30)  # a small old exchange behind a large one


class Summariser:
    """A stand-in for `ask` in the checks: keeps the text of every request, answers with a padded summary."""

    def __init__(self) -> None:
        self.sent: list[list[dict]] = []

    def __call__(self, messages: list[dict]) -> str:
        self.sent.append([dict(m) for m in messages])
        return "  The user is Maya; she lives in Portland and likes teal.\n"


OLD = "The user is Maya and her favorite color is teal."
DROPPED = [
    {"role": "user", "content": "I live in Portland."},
    {"role": "assistant", "content": "Portland, lovely."},
]


def _merge(fn) -> tuple[str, Summariser]:
    ask = Summariser()
    return fn(OLD, [dict(m) for m in DROPPED], ask), ask


def _body(fn) -> str:
    sent = _merge(fn)[1].sent
    return sent[0][0]["content"] if len(sent) == 1 and len(sent[0]) == 1 else ""


def _between(text: str, tag: str) -> str:
    start, end = text.find(f"<{tag}>"), text.find(f"</{tag}>")
    return text[start:end] if 0 <= start < end else ""


EXERCISES: list[Exercise] = [
    Exercise(
        id="04.trim",
        title="trim by whole exchanges",
        fallback="helpers.memory.window:trim",
        hint="group the messages into exchanges (a user message and the reply after it); keep the newest exchange "
        "always, then add older WHOLE exchanges, newest first, while the total stays within budget; stop at the "
        "first that does not fit.",
        cases=(
            Case(
                "everything fits: nothing is dropped",
                args=(window(*EXAMPLE), 1000),
                expect=_split(EXAMPLE, 0),
                shown_input="trim_by_exchanges(window(120, 90, 60, 80), 1000)",
            ),
            Case(
                "the docstring's example: the older exchange does not fit",
                args=(window(*EXAMPLE), 200),
                expect=_split(EXAMPLE, 2),
                shown_input="trim_by_exchanges(window(120, 90, 60, 80), 200)   # u1 a1 = 210, u2 a2 = 140",
            ),
            Case(
                "the newest exchange stays even when it alone is over budget",
                args=(window(*EXAMPLE), 50),
                expect=_split(EXAMPLE, 2),
                shown_input="trim_by_exchanges(window(120, 90, 60, 80), 50)",
            ),
            Case(
                "never split an exchange: a1 would fit alone, but not without u1",
                args=(window(*SPLITS), 135),
                expect=_split(SPLITS, 2),
                shown_input="trim_by_exchanges(window(100, 30, 20, 30, 10, 40), 135)",
            ),
            Case(
                "stop at the first exchange that does not fit (kept is the newest end of the list, no gaps)",
                args=(window(*GAP), 100),
                expect=_split(GAP, 4),
                shown_input="trim_by_exchanges(window(10, 10, 200, 200, 30, 30), 100)",
            ),
            Case("an empty window", args=([], 100), expect=([], [])),
        ),
    ),
    Exercise(
        id="04.merge",
        title="merge the dropped turns into the summary",
        fallback="helpers.memory.summary:merge_into_summary",
        hint="make ONE user message: the old summary between <existing_summary> tags, then only the dropped turns "
        "as 'User: ...' / 'Assistant: ...' lines between <new_turns> tags; call ask([that message]) once and "
        "return its reply, stripped.",
        cases=(
            Case(
                "returns the summariser's new summary (stripped), not the old one with it appended",
                drive=lambda fn: _merge(fn)[0],
                expect="The user is Maya; she lives in Portland and likes teal.",
                shown_input=f"merge_into_summary({OLD!r}, dropped, ask)   # ask answers '  The user is Maya; ...'",
            ),
            Case(
                "one call to ask, with one user message",
                drive=lambda fn: [[m["role"] for m in sent] for sent in _merge(fn)[1].sent],
                expect=[["user"]],
                shown_input="the lists merge_into_summary passed to ask(...), by role",
            ),
            Case(
                "the old summary is in the request, inside <existing_summary>",
                drive=_body,
                test=lambda body: OLD in _between(body, "existing_summary"),
                expect_text=f"<existing_summary> ... {OLD} ... </existing_summary>",
                shown_input="the text of the message sent to ask",
            ),
            Case(
                "the dropped turns are in it, inside <new_turns>, one 'User:' / 'Assistant:' line each",
                drive=_body,
                test=lambda body: (
                    "User: I live in Portland." in _between(body, "new_turns")
                    and "Assistant: Portland, lovely." in _between(body, "new_turns")
                ),
                expect_text="<new_turns>\nUser: I live in Portland.\nAssistant: Portland, lovely.\n</new_turns>",
                shown_input="the text of the message sent to ask",
            ),
        ),
    ),
]
