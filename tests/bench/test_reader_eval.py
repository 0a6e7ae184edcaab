"""helpers.bench.reader_eval: the hand-written phrasing corpus and the reader's figures on it (issue 12)."""

import re
from collections import Counter

import pytest

from helpers.config import load_settings
from helpers.llm import get_client
from helpers.bench.reader_eval import (CORPUS_FILES, CorpusMissing, build_request, declines, evaluate, has_answer,
                                       load_corpus, main, table)

_RELATION_ALIAS = {"dates_times": "dates", "numbers_codes": "numbers"}
RELATIONS = {"family", "work", "places", "dates", "preferences", "dietary", "plans", "possessions", "numbers"}
_STOP = set("a an the my me i i'm i've is are was do does did what which who where when how of in on at to for "
            "and or we our us you your with it this that be".split())


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9']+", text.lower()) if w not in _STOP}


def test_tuning_corpus_size_and_relations():
    items = load_corpus("tuning")
    pairs = [i for i in items if i["present"]]
    absent = [i for i in items if not i["present"]]
    assert len(pairs) >= 150 and len(absent) >= 50
    # part C (written as the first blind held-out file) names two relations its own way
    assert {_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in pairs} == RELATIONS \
        == {_RELATION_ALIAS.get(i["relation"], i["relation"]) for i in absent}
    assert len({i["id"] for i in items}) == len(items)
    assert {i["source"] for i in items} == {"phrasing_corpus", "phrasing_corpus_b", "phrasing_corpus_c", "phrasing_holdout_2",
                                                "phrasing_holdout_3", "phrasing_holdout_4"}
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
    body = build_request(item, items, "m")
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    assert item["statement"] in said and said[-1] == item["question"] and len(said) == 4
    absent = next(i for i in items if not i["present"])
    body = build_request(absent, items, "m")
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
FIGURES = {"tuning": (484 / 617, 116 / 617, 39), "held_out": (78 / 117, 33 / 117, 15)}


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
    assert main(["--part", "tuning"]) == 0
    out = capsys.readouterr().out
    assert "relation" in out and "invented" in out and "all" in out
