"""helpers.bench.reader_eval: the hand-written phrasing corpus and the reader's figures on it (issue 12)."""

import json
import re
from collections import Counter

import pytest

from helpers.bench.reader_eval import (
    CORPUS_FILES,
    CorpusMissing,
    build_request,
    declines,
    evaluate,
    has_answer,
    load_corpus,
    main,
    table,
)
from helpers.config import load_settings
from helpers.llm import get_client, offline_transport

_RELATION_ALIAS = {"dates_times": "dates", "numbers_codes": "numbers"}
RELATIONS = {"family", "work", "places", "dates", "preferences", "dietary", "plans", "possessions", "numbers"}
_STOP = set(
    "a an the my me i i'm i've is are was do does did what which who where when how of in on at to for "
    "and or we our us you your with it this that be".split()
)


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP}


def test_tuning_corpus_size_and_relations():
    items = load_corpus("tuning")
    pairs = [i for i in items if i["present"]]
    absent = [i for i in items if not i["present"]]
    assert len(pairs) >= 150 and len(absent) >= 50
    # part C (written as the first blind held-out file) names two relations its own way
    assert (
        {_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in pairs}
        == RELATIONS
        == {_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in absent}
    )
    assert len({i["id"] for i in items}) == len(items)
    assert {i["source"] for i in items} == {
        "phrasing_corpus",
        "phrasing_corpus_b",
        "phrasing_corpus_c",
        "phrasing_holdout_2",
        "phrasing_holdout_3",
        "phrasing_holdout_4",
    }
    assert min(Counter(_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in pairs).values()) >= 15


def test_held_out_file_exists_and_is_separate():
    """The held-out part (phrasing_holdout_3.json) is written blind by someone else. This test FAILS, on purpose,
    until that file is merged: a missing held-out part is a missing measurement, not something to skip."""
    path = CORPUS_FILES["held_out"][0]
    assert path.exists(), f"held-out corpus {path.name} is missing: issue 12's held-out figures cannot be measured"
    held = load_corpus("held_out")
    tuning_ids = {i["id"] for i in load_corpus("tuning")}
    tuning_questions = {i["question"].lower() for i in load_corpus("tuning")}
    assert held and {_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in held if i["present"]} == RELATIONS
    assert not {i["id"] for i in held} & tuning_ids
    assert not {i["question"].lower() for i in held} & tuning_questions


def test_a_missing_part_is_a_clear_error_and_all_reads_what_exists(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(CORPUS_FILES, "held_out", [tmp_path / "phrasing_holdout_3.json"])
    with pytest.raises(CorpusMissing, match="phrasing_holdout_3.json"):
        load_corpus("held_out")
    assert main(["--part", "held_out"]) == 2
    assert "phrasing_holdout_3.json" in capsys.readouterr().err
    assert {i["part"] for i in load_corpus("all")} == {"tuning"}


def test_questions_are_paraphrased_and_never_give_the_answer_away():
    for item in load_corpus("all"):
        if item["present"]:
            for group in item["expect"]:
                assert not any(option.lower() in item["question"].lower() for option in group), item["id"]
                assert any(option.lower() in item["statement"].lower() for option in group), item["id"]
        said = item["statement"] if item["present"] else item["distractor"]
        # the question is not the statement turned around: it brings words of its own
        assert _content(item["question"]) - _content(said), item["id"]


def test_judge_reads_declines_and_answers():
    assert declines("I don't know that: you haven't told me in this conversation.")
    assert declines("You haven\u2019t mentioned where your brother lives.")
    assert declines("I'm not sure - you didn't tell me that.")
    assert not declines("Your sister lives in Pasadena.")
    assert has_answer("She lives in Pasadena, you said.", [["Pasadena"]])
    assert has_answer("You turn 34.", [["thirty-four", "34"]])
    assert not has_answer("On Monday.", [["Monday"], ["Friday"]])


def test_request_holds_the_statement_another_statement_and_the_question_only():
    items = load_corpus("tuning")
    item = items[0]
    body = build_request(item, items, "claude-haiku-4-5")
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert item["statement"] in said and said[-1] == item["question"] and len(said) == 4
    absent = next(i for i in items if not i["present"])
    body = build_request(absent, items, "claude-haiku-4-5")
    assert absent["distractor"] in [m["content"] for m in body["messages"]]


def test_table_rates_by_relation_and_overall():
    items = [i for i in load_corpus("tuning") if i["source"] == "phrasing_corpus"][::30]  # 4 pairs, 1 absent
    outcomes = evaluate(get_client(load_settings()), items, "claude-haiku-4-5")
    rows = table(outcomes)
    assert rows["all"]["n"] == 4 and rows["all"]["absent"] == 1 and len(rows) == 6
    assert abs(sum(rows["all"][k] for k in ("correct", "false_idk", "wrong")) - 1) < 1e-9


# The issue 12 figures are >= 90% correct, <= 5% false "I don't know", 0 invented; they are NOT met (issue 12 stays
# open). Both parts are held to their measured floor, so a regression fails:
# - tuning (parts A-F: 617 pairs, 252 absent; C, D = holdout 2, E = holdout 3 and F = holdout 4 were each first a
#   blind held-out file, measured once, then tuned on): 484 correct (78.4%), 116 false "I don't know" (18.8%),
#   39 of 252 invented;
# - held out (phrasing_holdout_5.json, written blind by a helper who never saw the reader, measured once after the
#   round-5 reader was committed: 117 pairs, 54 absent): 78 correct (66.7%), 33 false "I don't know" (28.2%), 15 of
#   54 invented. It loads with load_corpus("held_out"), which raises CorpusMissing (the test FAILS) while it is missing.
# Issue 20: answers are matched as whole words ("teal" is not found in "steal"); re-measured offline
# (`python -m helpers.bench.reader_eval`, both parts): tuning 482 correct, 116 false IDK, 39 invented;
# held out 77, 33, 15.
# Issue 40's second reading (the statement a question points to by meaning, helpers.offline.reader.second_reading):
# tuning 495 correct, 103 false IDK, 39 invented; held out 79, 31, 15 (its first measure showed one more invented
# answer on the held-out part, a past state read for a present question; the generic tense check that removed it
# was written after seeing it, so the held-out part is no longer blind for this change). A day said in the plural
# read as a when ("on Fridays", issue 40): tuning 496 correct, 102 false IDK, 39 invented; held out unchanged.
FIGURES = {"tuning": (496 / 617, 102 / 617, 39), "held_out": (79 / 117, 31 / 117, 15)}


# The suite's fast regression floor: a fixed sample of each part (every 16th tuning item, every 6th held-out one),
# each request holding the same other statement as in the whole-part run (pool = the whole part), so these verdicts
# are the whole run's on those items. Measured (offline): tuning 30 of 40 correct, 10 false "I don't know", 3 of 15
# invented; held out 17 of 20 correct, 2 false "I don't know", 2 of 9 invented. The whole parts (869 + 171 questions)
# run in test_offline_reader_figures (slow: `python3 run.py test --all`) and `python -m helpers.bench.reader_eval`.
SAMPLE = {"tuning": (16, 30, 10, 3), "held_out": (6, 17, 2, 2)}  # step, min correct, max false IDK, max invented


@pytest.mark.slow  # a benchmark floor over a sample of real conversations (seconds): the full set runs it
@pytest.mark.parametrize("part", sorted(SAMPLE))
def test_offline_reader_floor_on_a_fixed_sample(part):
    step, min_correct, max_false_idk, max_invented = SAMPLE[part]
    settings = load_settings()
    items = load_corpus(part)
    outcomes = evaluate(get_client(settings), items[::step], settings.chat_model, pool=items)
    verdicts = Counter(o.verdict for o in outcomes)
    failures = [(o.id, o.question, o.reply) for o in outcomes if o.verdict not in ("correct", "declined")]
    assert verdicts["correct"] >= min_correct, (verdicts, failures)
    assert verdicts["false_idk"] <= max_false_idk, (verdicts, failures)
    assert verdicts["invented"] <= max_invented, (verdicts, failures)


def test_a_sample_gets_the_requests_of_the_whole_run():
    items = load_corpus("tuning")
    sample = items[::16]
    assert [build_request(i, sample, "claude-haiku-4-5") for i in sample] != [
        build_request(i, items, "claude-haiku-4-5") for i in sample
    ]
    client = get_client(load_settings())
    evaluate(client, sample[:3], "claude-haiku-4-5", pool=items)
    sent = [body for path, body in offline_transport(client).requests if path.endswith("/v1/messages")]
    assert sent == [build_request(i, items, "claude-haiku-4-5") for i in sample[:3]]


@pytest.mark.slow
@pytest.mark.parametrize("part", sorted(CORPUS_FILES))
def test_offline_reader_figures(part):
    """Through the real SDK (offline client): correct, false "I don't know" and invented answers per part."""
    min_correct, max_false_idk, max_invented = FIGURES[part]
    settings = load_settings()
    items = load_corpus(part)
    assert items, part
    outcomes = evaluate(get_client(settings), items, settings.chat_model)
    rows = table(outcomes)
    failures = [(o.id, o.question, o.reply) for o in outcomes if o.verdict not in ("correct", "declined")]
    assert rows["all"]["correct"] >= min_correct, (rows["all"], failures[:10])
    assert rows["all"]["false_idk"] <= max_false_idk + 1e-9, (rows["all"], failures[:10])
    assert rows["all"]["invented"] <= max_invented, [f for f in failures if "absent" in f[0]]


def test_cli_prints_the_table(capsys):
    assert main(["--part", "tuning", "--every", "80"]) == 0
    out = capsys.readouterr().out
    assert "relation" in out and "invented" in out and "all" in out
    assert main(["--part", "tuning", "--every", "80", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["tables"]["tuning"]
    assert rows["all"]["n"] + rows["all"]["absent"] == len(load_corpus("tuning")[::80])


def test_expected_words_are_matched_whole():
    """Issue 20: "teal" is not an answer found in "steal" (nor "4411" in "44112")."""
    from helpers.bench.reader_eval import has_answer

    assert has_answer("A teal kayak.", [["teal"]]) and has_answer("TEAL, yes", [["teal"]])
    assert not has_answer("They steal kayaks.", [["teal"]])
    assert not has_answer("Code 44112.", [["4411"]])
    assert has_answer("It is 7:45 pm.", [["7:45"]]) and not has_answer("It is 17:45.", [["7:45"]])
