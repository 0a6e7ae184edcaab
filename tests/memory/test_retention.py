"""helpers.memory.retention and the retention check in helpers.memory.summary.merge_summary (issue 12 item 4)."""

import json
from types import SimpleNamespace

from helpers import prompts
from helpers.config import load_settings
from helpers.db.store import mongomock_store
from helpers.memory import BoundedMemory
from helpers.memory.retention import check_retention, fact_present, value_words
from helpers.memory.summary import merge_summary


def test_value_words_drop_the_framing_and_keep_the_value():
    assert value_words("The user is allergic to peanuts.") == ["allergic", "peanut"]
    assert value_words("The user's sister Priya lives in Pasadena.") == ["sister", "priya", "pasadena"]
    assert value_words("The user is.") == []


def test_a_different_value_is_not_the_same_fact():
    assert not fact_present("The user is allergic to peanuts.", "The user is allergic to shellfish.")
    assert not fact_present("The user's dog is named Biscuit.", "The user has a dog.")
    assert not fact_present("The user lives in Portland.", "The user lives in Oregon.")


def test_rephrasing_keeps_the_fact():
    assert fact_present("The user is allergic to peanuts.", "Maya has a peanut allergy; she is allergic to them.")
    assert fact_present(
        "The user's sister Priya lives in Pasadena and is a nurse.", "Her sister Priya, a nurse, is based in Pasadena."
    )
    assert fact_present("Dinner at Bestia is at 7:45pm on Friday.", "On Friday they have dinner at Bestia at 7:45 pm.")


def test_a_negated_fact_needs_its_negation():
    assert not fact_present("The user doesn't eat meat.", "The user likes to eat meat.")
    assert fact_present("The user doesn't eat meat.", "The user does not eat meat.")


def test_nothing_to_check_is_none_not_a_perfect_score():
    assert check_retention([], "anything").score is None
    assert check_retention(["The user is."], "anything").score is None
    assert check_retention(["The user likes teal.", "The user lives in Portland."], "Likes teal.").score == 0.5


class ScriptedClient:
    """A client whose summary and extraction replies are scripted; records every request body."""

    def __init__(self, summaries, facts):
        self.summaries, self.facts, self.bodies = list(summaries), facts, []
        self.messages = SimpleNamespace(create=self._create)

    def _create(self, **body):
        self.bodies.append(body)
        if body.get("tools"):  # extraction as a forced tool call
            block = SimpleNamespace(
                type="tool_use", name=body["tools"][0]["name"], id="toolu_1", input={"facts": self.facts}
            )
            return SimpleNamespace(
                content=[block],
                model=body["model"],
                stop_reason="tool_use",
                usage=SimpleNamespace(input_tokens=10, output_tokens=5),
            )
        text = self.summaries.pop(0) if body["system"] == prompts.SUMMARY_TASK else json.dumps({"facts": self.facts})
        return SimpleNamespace(
            content=[SimpleNamespace(type="text", text=text)],
            model=body["model"],
            stop_reason="end_turn",
            usage=SimpleNamespace(input_tokens=10, output_tokens=len(text.split())),
        )


DROPPED = [{"role": "user", "content": "I'm allergic to peanuts."}, {"role": "assistant", "content": "Noted."}]


def test_older_facts_are_checked_too():
    client = ScriptedClient(
        ["The user is allergic to peanuts.", "The user is allergic to peanuts."], ["The user is allergic to peanuts."]
    )
    result = merge_summary(
        client, "m", "The user's name is Maya.", DROPPED, max_tokens=50, known_facts=["The user's name is Maya."]
    )
    assert result.facts == ["The user's name is Maya.", "The user is allergic to peanuts."]
    assert result.missing == ["The user's name is Maya."] and result.retention == 0.5
    assert "<must_keep>\nThe user's name is Maya.\n</must_keep>" in client.bodies[-1]["messages"][0]["content"]


def test_a_lost_value_triggers_one_re_merge_naming_it():
    client = ScriptedClient(
        ["The user is allergic to shellfish.", "The user is allergic to peanuts."], ["The user is allergic to peanuts."]
    )
    result = merge_summary(client, "m", "", DROPPED, max_tokens=50)
    assert result.remerged and result.missing == [] and result.retention == 1.0 and result.calls == 3


def test_no_stated_facts_is_n_a():
    client = ScriptedClient(["The user asked about beaches."], [])
    result = merge_summary(client, "m", "", DROPPED, max_tokens=50)
    assert result.retention is None and result.missing == [] and result.calls == 2


def test_a_fact_lost_in_an_earlier_merge_stays_lost_without_a_second_call_each_time():
    client = ScriptedClient(["The user is allergic to peanuts."], ["The user is allergic to peanuts."])
    result = merge_summary(
        client,
        "m",
        "The user is allergic to peanuts.",
        DROPPED,
        max_tokens=50,
        known_facts=["The user's dog is named Biscuit."],
    )
    assert result.missing == ["The user's dog is named Biscuit."] and result.calls == 2 and not result.remerged


def test_bounded_memory_carries_the_facts_it_is_responsible_for(monkeypatch, tmp_path):
    seen = []

    def fake_merge(client, model, old_summary, dropped, **kwargs):
        seen.append(kwargs["known_facts"])
        return SimpleNamespace(
            summary="s",
            tokens=1,
            retention=0.5,
            missing=["b"],
            facts=["a", "b"],
            calls=1,
            truncated=False,
            to_dict=lambda: {},
        )

    monkeypatch.setattr("helpers.memory.commit.merge_summary", fake_merge)
    memory = BoundedMemory(
        None, load_settings(), store=mongomock_store(), budget=1, summary_max_tokens=10, system="persona"
    )
    session = {
        "window": [{"role": "user", "content": "x", "tokens": 5}, {"role": "assistant", "content": "y", "tokens": 5}],
        "summary": "old",
        "summary_tokens": 1,
        "facts": ["a"],
        "base_tokens": 10,
    }
    exchange = [{"role": "user", "content": "z", "tokens": 5}, {"role": "assistant", "content": "w", "tokens": 5}]
    fields, _info, _left_out = memory._fold(session, exchange, base=10)
    assert seen == [["a"]] and fields["facts"] == ["a", "b"] and fields["missing"] == ["b"]


def test_numbers_are_matched_as_whole_tokens():
    """Issue 20: "4411" is not kept in "44112", nor "7:45" in "17:45"; "7:45pm" is kept as "7:45 pm"."""
    assert fact_present("The user's locker code is 4411.", "The user's locker code is 4411.")
    assert not fact_present("The user's locker code is 4411.", "The user's locker code is 44112.")
    assert not fact_present("The user's locker code is 4411.", "The user's locker code is 34411.")
    assert not fact_present("Dinner is at 7:45.", "Dinner is at 17:45.")
    assert fact_present("Dinner is at 7:45pm.", "Dinner is at 7:45 pm.")
