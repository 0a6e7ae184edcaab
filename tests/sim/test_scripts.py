"""helpers.sim.scripts: deterministic scripted conversations with planted facts and details (03-06)."""

import pytest

from helpers.sim.scripts import (
    EXACT_LOOKUPS,
    OPENING_TURNS,
    PARAPHRASED,
    PLANTED_DETAILS,
    PLANTED_FACTS,
    recall_questions,
    recall_script,
    trip_script,
)
from helpers.tokens import local_tokens


def test_trip_script_is_deterministic_and_prefix_stable():
    assert trip_script(150) == trip_script(150)
    assert trip_script(150)[:40] == trip_script(40)
    assert trip_script(2) == list(OPENING_TURNS[:2])
    assert trip_script(1)[0] == "Hi Scout, my name is Maya and my favorite color is teal."
    assert len(set(trip_script(300))) == 300  # filler texts vary
    with pytest.raises(ValueError):
        trip_script(0)


def test_planted_answers_are_told_only_where_they_are_planted():
    script = recall_script(200)
    told_at = {i for i in range(len(OPENING_TURNS))} | {index for index, *_rest in PLANTED_DETAILS}
    for _kind, _question, answer in recall_questions():
        where = {i for i, text in enumerate(script) if answer.lower() in text.lower()}
        assert where and where <= told_at, (answer, sorted(where))


def test_filler_turns_are_questions():
    for text in trip_script(200)[len(OPENING_TURNS) :]:
        assert "?" in text and not text.lower().startswith(("i ", "i'm", "my ", "we're", "our ")), text


def test_filler_turns_have_realistic_lengths():
    lengths = [local_tokens(t) for t in trip_script(120)[len(OPENING_TURNS) :]]
    assert 12 <= min(lengths) and max(lengths) <= 40


def test_recall_script_plants_each_detail_at_its_turn():
    script = recall_script(40)
    for index, statement, _question, _answer in PLANTED_DETAILS:
        assert script[index] == statement
    assert script[: len(OPENING_TURNS)] == list(OPENING_TURNS)
    assert recall_script(40) == script


def test_recall_questions_cover_every_kind_and_each_answer_was_planted():
    questions = recall_questions()
    kinds = {kind for kind, _q, _a in questions}
    assert kinds == {"fact", "detail", "paraphrase", "exact"}
    assert len(questions) == len(PLANTED_FACTS) + len(PLANTED_DETAILS) + len(PARAPHRASED) + len(EXACT_LOOKUPS)
    told = " ".join(recall_script(40))
    for _kind, question, answer in questions:
        assert answer.lower() in told.lower(), question
        assert answer.lower() not in question.lower()
