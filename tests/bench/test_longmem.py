"""The long-conversation benchmark: corpus, whole-word scoring, baselines, the harness, and the CLI acceptance test."""

import json
import os
import subprocess
import sys

import pytest

from helpers.bench import answer_in_request
from helpers.bench import main as bench_main
from helpers.bench.longmem.baselines import BM25, rrf
from helpers.bench.longmem.data import CATEGORIES, SPLITS, corpus, date_forms, generate, write_jsonl
from helpers.bench.longmem.methods import METHODS, format_markdown, format_table, run_longmem
from helpers.bench.scoring import gold_in_request, mentions

# ---------------------------------------------------------------------------- whole-word scoring


def test_answer_in_request_matches_whole_words_only():
    request = {"system": "Be brief.", "messages": [{"role": "user", "content": "Did someone steal my bike?"}]}
    assert not answer_in_request(request, "teal")  # a substring match said yes here
    assert answer_in_request(request, "STEAL")
    assert answer_in_request({"system": "Her coat is teal.", "messages": []}, "teal")
    assert answer_in_request({"system": "", "messages": [{"role": "user", "content": "teal's nice"}]}, "teal")


def test_mentions_handles_multiword_answers_and_punctuation():
    assert mentions("went to the\nRed  Lion, then home", "the Red Lion")
    assert mentions("see (Fontaines D.C.) live", "Fontaines D.C.")
    assert not mentions("Leedsville is nice", "Leeds")
    assert not mentions("cellos everywhere", "cello")
    with pytest.raises(ValueError):
        mentions("text", "   ")


def test_gold_needs_every_group():
    request = {"system": "Noor moved last year.", "messages": [{"role": "user", "content": "Where?"}]}
    assert gold_in_request(request, [["Noor"]])
    assert not gold_in_request(request, [["Noor"], ["Lisbon", "Portugal"]])
    request["system"] += " She lives in Portugal now."
    assert gold_in_request(request, [["Noor"], ["Lisbon", "Portugal"]])


# ---------------------------------------------------------------------------- corpus


def test_corpus_is_long_dated_two_person_and_has_enough_questions():
    convs = corpus("all")
    assert len(convs) == 6 and set(SPLITS["tune"]).isdisjoint(SPLITS["report"])
    questions = [q for c in convs for q in c.questions]
    assert len(questions) >= 150
    assert {q.category for q in questions} == set(CATEGORIES)
    for conv in convs:
        assert len(conv.turns) >= 400
        assert len({t["session"] for t in conv.turns}) >= 10
        assert [t["role"] for t in conv.turns[:4]] == ["user", "assistant", "user", "assistant"]
        assert all(a["role"] != b["role"] for a, b in zip(conv.turns, conv.turns[1:]))
        assert len({t["speaker"] for t in conv.turns}) == 2
        assert len({t["ts"][:10] for t in conv.turns}) >= 10
        assert any(conv.turns[e]["role"] == "assistant" for q in conv.questions for e in q.evidence)  # both speak facts


def test_every_gold_answer_is_in_its_evidence_and_not_in_its_question():
    for conv in corpus("all"):
        for q in conv.questions:
            evidence = "\n".join(conv.turns[e]["content"] for e in q.evidence)
            dates = {d for s in q.sessions for d in date_forms(conv.dates[s])}
            for group in q.gold:
                assert any(mentions(evidence, a) or a in dates for a in group), (conv.user_id, q.qid)
                assert not any(mentions(q.text, a) for a in group), (conv.user_id, q.qid, q.text)


def test_corpus_is_deterministic_and_people_differ():
    a, b = generate(4), generate(4)
    assert a.turns == b.turns and [q.text for q in a.questions] == [q.text for q in b.questions]
    pets = {next(q.gold[0][0] for q in c.questions if q.qid == "pet_name") for c in corpus("all")}
    assert len(pets) == 6


def test_a_fact_changes_later_and_the_question_wants_the_new_value():
    conv = generate(0)
    q = next(q for q in conv.questions if q.qid == "job_now")
    text = "\n".join(t["content"] for t in conv.turns[: q.evidence[0]])
    assert not any(mentions(text, a) for a in q.gold[0])  # the new job is only named at the correction


def test_transcript_file_is_what_import_reads(tmp_path):
    conv = generate(1, sessions=6, exchanges=(2, 3))
    path = write_jsonl(conv, tmp_path / "c.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == len(conv.turns)
    assert set(lines[0]) == {"role", "content", "ts", "speaker"}


# ---------------------------------------------------------------------------- baselines


def test_bm25_prefers_the_rarer_matching_term():
    index = BM25(["the cello lesson went well", "the weather was grim", "lesson about lessons and weather"])
    scores = index.scores("cello lesson")
    assert scores.argmax() == 0 and scores[1] == 0


def test_rrf_rewards_items_ranked_well_by_both():
    assert rrf([1, 2, 3], [2, 3, 1])[0] == 2
    assert rrf([5, 6], [6, 5], [6])[0] == 6


# ---------------------------------------------------------------------------- the harness on tiny data


@pytest.fixture(scope="module")
def tiny():
    conv = generate(2, sessions=6, exchanges=(3, 4))
    return conv, run_longmem([conv], (300, 900), details=True, cache_dir=None)


def test_harness_reports_every_method_and_budget(tiny):
    conv, result = tiny
    seen = {(r["method"], r["budget"]) for r in result["rows"]}
    assert ("full", None) in seen
    assert {(m, b) for m in METHODS if m != "full" for b in (300, 900)} <= seen
    assert result["questions"] == len(conv.questions)
    for row in result["rows"]:
        assert set(row["by_category"]) == set(CATEGORIES) and 0 <= row["recall"] <= 1


def test_full_transcript_is_the_upper_bound(tiny):
    _conv, result = tiny
    rows = {(r["method"], r["budget"]): r for r in result["rows"]}
    assert rows[("full", None)]["recall"] == 1.0
    assert all(r["recall"] <= 1.0 for r in result["rows"])


def test_baselines_stay_within_the_budget_and_more_budget_never_hurts_retrieval(tiny):
    _conv, result = tiny
    rows = {(r["method"], r["budget"]): r for r in result["rows"]}
    for method in ("last_turns", "bm25", "embeddings", "hybrid"):
        for budget in (300, 900):
            assert all(d["tokens"] <= budget for d in rows[(method, budget)]["details"]), (method, budget)
        assert rows[(method, 900)]["recall"] >= rows[(method, 300)]["recall"]
    assert rows[("embeddings", 900)]["recall"] > rows[("last_turns", 300)]["recall"]


def test_tables_show_every_row(tiny):
    _conv, result = tiny
    text, markdown = format_table(result), format_markdown(result)
    assert len(text.splitlines()) == 2 + len(result["rows"])
    assert len(markdown.splitlines()) == 2 + len(result["rows"])
    assert "| 300 | embeddings |" in markdown and "100.0%" in text.splitlines()[2]  # full transcript row first


def test_bench_longmem_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        bench_main(["longmem", "--budgets", "1000,abc"])
    assert bench_main(["longmem", "--methods", "full,nonsense"]) == 2
    assert "nonsense" in capsys.readouterr().err


# ---------------------------------------------------------------------------- through the CLI (issue 13 "Done when")


def _chat(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANTHROPIC_API_KEY": ""}
    return subprocess.run([sys.executable, "-m", "helpers.chat", *args], capture_output=True, timeout=900, env=env)


@pytest.mark.slow
def test_cli_recalls_an_old_fact_for_a_paraphrased_question_for_that_user_only(tmp_path):
    # 9 sessions (362 turns) still hold facts 300+ turns and 5+ sessions back; another user has memories of their own
    owner, other = generate(3, sessions=9), generate(4, sessions=6, exchanges=(4, 5))
    last_session = owner.turns[-1]["session"]
    q = next(
        q
        for q in owner.questions
        if q.category == "single-hop"
        and len(q.evidence) == 1
        and len(owner.turns) - q.evidence[0] >= 300
        and last_session - q.sessions[0] >= 5
    )
    said = owner.turns[q.evidence[0]]["content"]
    assert not any(mentions(q.text, a) for a in q.gold[0]) and q.text not in said  # paraphrased, not quoted
    for conv in (owner, other):
        path = write_jsonl(conv, tmp_path / f"{conv.user_id}.jsonl")
        out = _chat(
            "--stage",
            "vector",
            "--user",
            conv.user_id,
            "--session-file",
            str(tmp_path / conv.user_id),
            "--budget",
            "2000",
            "--import",
            str(path),
        )
        assert out.returncode == 0, out.stderr.decode()[-2000:]
    requests = {}
    for conv in (owner, other):
        out = _chat(
            "--stage",
            "vector",
            "--user",
            conv.user_id,
            "--session-file",
            str(tmp_path / conv.user_id),
            "--budget",
            "2000",
            "--show-request",
            q.text,
        )
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        requests[conv.user_id] = json.loads(out.stdout)
    assert gold_in_request(requests[owner.user_id], q.gold), (q.text, q.gold)
    assert not gold_in_request(requests[other.user_id], q.gold)


# ---------------------------------------------------------------------------- the relevance floor's tuning


@pytest.mark.slow  # an import and three passes over the questions (~10-30 s)
def test_floor_curve_scores_each_floor_on_one_import_and_choose_keeps_every_answer():
    """`bench floor` on a tiny generated conversation: one import, the same questions at each floor; a floor of 0.9
    sends almost nothing, so it loses answers and is never chosen; the choice loses no question."""
    from helpers.bench.longmem.floor import choose, floor_curve
    from helpers.bench.longmem.split_study import imported

    conv = generate(2, sessions=6, exchanges=(3, 4))  # as the harness's tiny data
    rows = floor_curve([(imported(conv, budget=1500), conv)], 1500, (-1.0, 0.1, 0.9))
    assert [r["floor"] for r in rows] == [-1.0, 0.1, 0.9] and all(r["questions"] == len(conv.questions) for r in rows)
    off, high = rows[0], rows[2]
    assert off["recall"] > 0 and high["recall"] < off["recall"] and high["questions_losing"] > 0
    assert high["memories_sent"] < off["memories_sent"] and high["noise_sent"] == 0
    chosen = choose(rows)
    assert chosen < 0.9 and next(r for r in rows if r["floor"] == chosen)["questions_losing"] == 0


def test_choose_takes_the_highest_floor_at_which_no_question_loses_recall():
    from helpers.bench.longmem.floor import choose

    assert (
        choose(
            [
                {"floor": -1.0, "recall": 0.5, "questions_losing": 0},
                {"floor": 0.2, "recall": 0.5, "questions_losing": 1},  # same mean, one question lost: not chosen
                {"floor": 0.1, "recall": 0.6, "questions_losing": 0},
            ]
        )
        == 0.1
    )
