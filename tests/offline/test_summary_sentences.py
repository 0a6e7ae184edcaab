"""Issue 23: the offline summariser never repeats a fact, keeps grammatical third person, and keeps a request as a
request. Run on the scripted transcripts (helpers.sim.scripts) through the real BoundedMemory and SDK."""

import re

import pytest

from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.llm import get_client
from helpers.memory import BoundedMemory
from helpers.offline.fact_rules import facts_from_turns, same_fact
from helpers.offline.language import sentences
from helpers.pricing import CostLedger
from helpers.sim.scripts import trip_script

# Told in a chat like 06's "your turn": facts, a request, and a person referred back to by a pronoun.
YOUR_TURN = [
    "Hi Scout, my name is Maya and my favorite color is teal.",
    "My grandmother Rosa lives in Pasadena and I'll visit her next month.",
    "Please don't suggest anything with meat or fish.",
    "I don't eat dairy either, so don't suggest ice cream.",
]


def _summaries(script: list[str], budget: int) -> list[str]:
    settings = load_settings({})
    memory = BoundedMemory(
        get_client(settings, max_retries=0),
        settings,
        store=mongomock_store(),
        user_id="u",
        session_id="s",
        ledger=CostLedger(),
        budget=budget,
    )
    seen = []
    for text in script:
        memory.turn(text)
        summary = memory.state().get("summary") or ""
        if summary and summary not in seen:
            seen.append(summary)
    return seen


def _repeated(summary: str) -> list[tuple[str, str]]:
    said = sentences(summary)
    return [
        (a, b)
        for i, a in enumerate(said)
        for b in said[i + 1 :]
        if a == b or same_fact(a, b) or a.rstrip(".") in b or b.rstrip(".") in a
    ]


@pytest.mark.parametrize("script, budget", [(trip_script(24), 120), (YOUR_TURN + trip_script(14)[5:], 90)])
def test_no_summary_repeats_a_sentence(script, budget):
    summaries = _summaries(script, budget)
    assert len(summaries) >= 2, "the window never trimmed: nothing was summarised"
    for summary in summaries:
        assert _repeated(summary) == [], summary
        assert not re.search(r"(?i)\bthe user'(?:ll|d|re|ve)\b|\b[A-Z][a-z]+'s (?:next|last|this|tomorrow)\b", summary)


def test_your_turn_summary_is_third_person_and_keeps_the_request_a_request():
    summary = _summaries(YOUR_TURN + trip_script(14)[5:], 90)[-1]
    assert "visit the user's grandmother Rosa next month" in summary, summary
    assert "The user asked the assistant not to suggest anything with meat or fish." in summary, summary
    assert summary.count("teal") == 1 and summary.count("Maya") == 1, summary


def test_an_acknowledgement_that_says_facts_back_adds_no_fact():
    facts = facts_from_turns(
        [("user", YOUR_TURN[0]), ("assistant", "Your name is Maya and your favorite color is teal.")]
    )
    assert facts == ["The user's name is Maya.", "The user's favorite color is teal."]


@pytest.mark.parametrize(
    "said, asked",
    [
        (
            "Please don't suggest anything with meat or fish.",
            "The user asked the assistant not to suggest anything with meat or fish.",
        ),
        (
            "Don't book anything before 9am, I'm a late riser.",
            "The user asked the assistant not to book anything before 9am.",
        ),
        ("Always keep my budget in mind.", "The user asked the assistant to always keep the user's budget in mind."),
    ],
)
def test_a_request_is_kept_as_a_request(said, asked):
    facts = facts_from_turns([("user", said)])
    assert asked in facts
    assert not any(f.startswith(("Don't", "Please", "Always")) for f in facts)
