"""Results files (docs/results/*.json) that notebooks load: provenance complete, consistent with themselves and
with the data they name (issue 21: no typed-in results; a loaded table must be current)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.bench.results import RESULTS_DIR, interval, paired_difference, recall_rows

ROOT = Path(__file__).resolve().parents[2]
LONGMEM = sorted(p for p in RESULTS_DIR.glob("longmem*.json"))


def test_there_is_a_long_conversation_results_file():
    assert LONGMEM, "06_long_conversations loads docs/results/longmem_generated.json"


@pytest.mark.parametrize("path", LONGMEM, ids=lambda p: p.name)
def test_provenance_is_complete_and_the_commit_exists(path: Path):
    for split, part in json.loads(path.read_text())["parts"].items():
        source = part["provenance"]
        assert {"command", "commit", "data", "date", "mode", "split"} <= set(source), source
        assert source["split"] == split and source["mode"] in ("offline", "live")
        assert source["command"].startswith("python -m helpers.bench longmem")
        known = subprocess.run(
            ["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True
        )
        assert known.returncode == 0, f"{path.name}: commit {source['commit']} is not in this repository"


@pytest.mark.parametrize("path", LONGMEM, ids=lambda p: p.name)
def test_rows_agree_with_their_details_and_cover_every_budget(path: Path):
    for part in json.loads(path.read_text())["parts"].values():
        methods = {r["method"] for r in part["rows"]}
        for method in methods - {"full"}:  # every method at every budget measured, not only the best one
            assert sorted(r["budget"] for r in part["rows"] if r["method"] == method) == sorted(part["budgets"])
        with_details = ["details" in row for row in part["rows"]]
        assert all(with_details) or not any(
            with_details
        )  # a part has every row's details, or none (intervals need them)
        for row in part["rows"]:
            if "details" not in row:
                assert row["questions"] == part["questions"] and 0 <= row["recall"] <= 1
                continue
            scores = [d["recalled"] for d in row["details"]]
            assert len(scores) == row["questions"] == part["questions"]
            assert abs(sum(scores) / len(scores) - row["recall"]) < 1e-3
            assert abs(sum(d["tokens"] for d in row["details"]) / len(scores) - row["tokens_per_question"]) < 0.1


@pytest.mark.parametrize("path", [p for p in LONGMEM if "generated" in p.name], ids=lambda p: p.name)
def test_generated_data_is_still_what_the_file_measured(path: Path):
    """The generator is seeded: the current corpus must have the same conversations, turns and questions."""
    from helpers.bench.longmem.data import corpus

    for split, part in json.loads(path.read_text())["parts"].items():
        convs = corpus(split)
        assert [c.user_id for c in convs] == part["conversations"]
        assert sum(len(c.turns) for c in convs) == part["turns"]
        asked = {(c.user_id, q.qid, q.text) for c in convs for q in c.questions}
        for row in part["rows"]:
            assert {(d["user"], d["qid"], d["question"]) for d in row["details"]} == asked


def test_intervals():
    low, high = interval([1] * 77 + [0] * 10)
    assert low < 77 / 87 < high and 0.79 < low and high < 0.94  # Wilson, n = 87
    assert interval([1.0, 1.0])[1] == 1.0 and interval([0.5, 0.5]) == (0.5, 0.5)
    part = {
        "rows": [
            {
                "method": "a",
                "budget": 1,
                "recall": 1.0,
                "tokens_per_question": 1,
                "details": [{"user": "u", "qid": str(i), "recalled": 1.0} for i in range(4)],
            },
            {
                "method": "b",
                "budget": 1,
                "recall": 0.5,
                "tokens_per_question": 1,
                "details": [{"user": "u", "qid": str(i), "recalled": float(i % 2)} for i in range(4)],
            },
        ]
    }
    diff = paired_difference(part, "a", "b", 1)
    assert diff["difference"] == 0.5 and diff["low"] < 0.5 < diff["high"] and diff["n"] == 4
    assert [r["n"] for r in recall_rows(part)] == [4, 4]
