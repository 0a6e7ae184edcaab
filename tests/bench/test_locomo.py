"""Real conversations in the LoCoMo format: the reader, the fixed split, the scoring and the results file (a tiny
synthetic file made here; the real data is never in the repository)."""

import json

import pytest

from helpers.bench.cli import build_parser
from helpers.bench.longmem import command
from helpers.bench.longmem.locomo import (
    TUNE_IDS,
    answer_recall,
    content_words,
    evidence_coverage,
    load_results,
    locomo_split,
    read_locomo,
    results_markdown,
    strongest_baseline,
    write_transcript,
)
from helpers.memory.transcript import read_transcript_file


def _sample(sample_id: str) -> dict:
    return {
        "sample_id": sample_id,
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a dog named Rex."},
                {
                    "speaker": "Ben",
                    "dia_id": "D1:2",
                    "text": "Lovely!",
                    "img_url": ["x"],
                    "blip_caption": "a puppy on a sofa",
                },
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ben", "dia_id": "D2:1", "text": "How is Rex?"},
                {"speaker": "Ana", "dia_id": "D2:2", "text": "He learned to sit."},
            ],
        },
        "qa": [
            {"question": "What is Ana's dog called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {
                "question": "When did Ana adopt a dog?",
                "answer": "7 May 2023",
                "evidence": ["D1:1; D9:9"],
                "category": 2,
            },
            {
                "question": "What did Ben's cat learn?",
                "adversarial_answer": "to sit",
                "evidence": ["D2:2"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "tiny_locomo.json"
    path.write_text(json.dumps([_sample("conv-26"), _sample("conv-99")]), encoding="utf-8")
    return path


def test_reader_dates_turns_maps_speakers_appends_captions_and_drops_category_5(locomo_file):
    conv = read_locomo(locomo_file)[0]
    assert (conv.user, conv.friend) == ("Ana", "Ben")
    assert [t["role"] for t in conv.turns] == ["user", "assistant", "assistant", "user"]
    assert conv.turns[1]["content"] == "Lovely! [shares a photo of a puppy on a sofa]"
    assert conv.turns[0]["ts"].startswith("2023-05-08") and conv.turns[2]["ts"].startswith("2023-06-20")
    assert [q.category for q in conv.questions] == ["single-hop", "temporal"]  # category 5 left out
    assert conv.questions[1].evidence == [0]  # "D1:1; D9:9": the known turn kept, the unknown one dropped


def test_speaker_a_plays_the_user_even_when_speaker_b_opens(tmp_path):
    sample = _sample("conv-1")
    sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"] = "Ben", "Ana"
    path = tmp_path / "swapped.json"
    path.write_text(json.dumps([sample]))
    conv = read_locomo(path)[0]
    assert (conv.user, conv.friend) == ("Ben", "Ana") and conv.turns[0]["role"] == "assistant"
    turns = read_transcript_file(str(write_transcript(conv, tmp_path / "t.jsonl")))  # the import reader takes it
    assert turns[0].role == "assistant" and turns[1].role == "user"


def test_transcript_goes_through_the_import_reader_with_sessions_and_names(locomo_file, tmp_path):
    conv = read_locomo(locomo_file)[0]
    turns = read_transcript_file(str(write_transcript(conv, tmp_path / "t.jsonl")))
    assert [(t.speaker, t.conversation, t.ts.date().isoformat()) for t in turns] == [
        ("Ana", 0, "2023-05-08"),
        ("Ben", 0, "2023-05-08"),
        ("Ben", 1, "2023-06-20"),
        ("Ana", 1, "2023-06-20"),
    ]
    assert turns[1].content.endswith("[shares a photo of a puppy on a sofa]")


def test_split_is_fixed_by_sample_id(locomo_file):
    convs = read_locomo(locomo_file)
    assert "conv-26" in TUNE_IDS
    assert [c.user_id for c in locomo_split(convs, "tune")] == ["conv-26"]
    assert [c.user_id for c in locomo_split(convs, "report")] == ["conv-99"]
    assert len(locomo_split(convs, "all")) == 2
    with pytest.raises(ValueError):
        locomo_split(convs, "half")


def test_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(ValueError, match="LoCoMo"):
        read_locomo(bad)


def test_answer_recall_counts_content_words_and_ignores_the_question():
    assert content_words("The 7 May, 2023") == ["7", "may", "2023"]
    request = {
        "system": "[Monday 8 May 2023]\nAna: I adopted Rex.",
        "messages": [{"role": "user", "content": "When did Ana adopt 7 dogs?"}],
    }
    assert answer_recall(request, "7 May 2023") == pytest.approx(2 / 3)  # "7" only in the question
    assert answer_recall(request, "Rex") == 1.0
    assert answer_recall(request, "Rexford") == 0.0


def test_evidence_coverage_needs_the_turn_verbatim():
    request = {"system": "Ana:  I adopted a dog\nnamed Rex.", "messages": [{"role": "user", "content": "Q?"}]}
    assert evidence_coverage(request, ["Ana: I adopted a dog named Rex."]) == 1.0
    assert evidence_coverage(request, ["Ana: I adopted a dog named Rex.", "Ben: Lovely!"]) == 0.5
    assert evidence_coverage(request, []) is None


def test_results_file_keeps_each_part_with_its_provenance(locomo_file, tmp_path):
    args = build_parser().parse_args(["longmem", "--data", str(locomo_file), "--split", "tune"])
    source = command.provenance(args, ["longmem", "--data", str(locomo_file)])
    assert {"command", "commit", "data", "date", "mode", "split"} <= set(source)
    assert len(source["data"]["sha256"]) == 64 and source["data"]["tune"] == list(TUNE_IDS)
    out = tmp_path / "results.json"
    row = {"method": "bm25", "budget": 2000, "recall": 0.5, "evidence": 0.5}
    command.write_results(out, "tune", {"rows": [row], "split": "tune"}, source)
    doc = command.write_results(out, "report", {"rows": [row]}, source | {"split": "report"})
    assert set(doc["parts"]) == {"tune", "report"} and doc["parts"]["tune"]["rows"] == [row]
    assert json.loads(out.read_text()) == doc


def test_results_table_and_strongest_baseline_come_from_the_file(tmp_path):
    rows = [
        {"method": "full", "budget": None, "recall": 0.9, "evidence": 1.0, "tokens_per_question": 20000},
        {"method": "bm25", "budget": 2000, "recall": 0.7, "evidence": 0.6, "tokens_per_question": 1990},
        {"method": "hybrid", "budget": 2000, "recall": 0.75, "evidence": 0.7, "tokens_per_question": 1990},
        {"method": "hybrid", "budget": 1000, "recall": 0.6, "evidence": 0.5, "tokens_per_question": 990},
        {"method": "vector", "budget": 2000, "recall": 0.85, "evidence": 0.76, "tokens_per_question": 1980},
    ]
    source = {"mode": "offline", "commit": "abcdef123", "date": "2026-12-01T16:00:00+00:00"}
    path = tmp_path / "r.json"
    command.write_results(path, "report", {"rows": rows, "conversations": ["conv-42"], "questions": 3}, source)
    doc = load_results(path)
    assert strongest_baseline(doc, "report", 2000)["method"] == "hybrid"
    table = results_markdown(doc, "report", 2000)
    assert "| vector stage | 0.850 | 0.760 | 1,980 |" in table and "| 990 |" not in table  # one budget only
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(ValueError, match="parts"):
        load_results(bad)
