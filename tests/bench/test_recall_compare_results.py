"""docs/results/recall.json and compare.json, which further/04 and further/06 print from instead of re-running the
benchmarks (minutes of CPU each): provenance complete, each file consistent with itself and with the current script
and questions, the notebooks' tables read from them; and (slow, CI's full set) a re-run gives the file's figures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.bench.compare import COMPARED, compare_results, compare_strategies
from helpers.bench.recall import RECALL_STRATEGIES, measure_recall, recall_results
from helpers.sim.scripts import recall_questions
from helpers.sim.simulate import REPLY_TOKENS

ROOT = Path(__file__).resolve().parents[2]
FURTHER = ROOT / "notebooks" / "further"


def _code(notebook: str) -> dict[str, str]:
    cells = json.loads((FURTHER / notebook).read_text(encoding="utf-8"))["cells"]
    return {c["id"]: "".join(c["source"]) for c in cells if c["cell_type"] == "code"}


@pytest.mark.parametrize(("load", "name"), [(recall_results, "recall"), (compare_results, "compare")])
def test_provenance_is_complete_and_the_commit_exists(load, name):
    source = load()["provenance"]
    assert {"command", "commit", "data", "date", "mode", "machine", "finished"} <= set(source), source
    assert (
        source["command"].startswith(f"python -m helpers.bench {name} ")
        and f"docs/results/{name}.json" in (source["command"])
    )
    assert source["mode"] == "offline" and source["uncommitted_changes"] is False
    known = subprocess.run(["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert known.returncode == 0, f"{name}.json: commit {source['commit']} is not in this repository"


def test_recall_rows_agree_with_their_questions_and_ask_the_current_ones():
    saved = recall_results()
    asked = [(kind, question) for kind, question, _answer in recall_questions()]
    assert list(saved["strategies"]) == list(RECALL_STRATEGIES) and saved["questions"] == len(asked)
    for name, row in saved["strategies"].items():
        assert [(q["kind"], q["question"]) for q in row["questions"]] == asked, name
        recalled = [q["recalled"] for q in row["questions"]]
        assert row["recall"] == pytest.approx(sum(recalled) / len(recalled))
        tokens = [q["memory_tokens"] for q in row["questions"]]
        assert row["memory_tokens_per_question"] == round(sum(tokens) / len(tokens), 1)


def test_compare_table_is_the_sum_of_its_per_turn_figures():
    saved = compare_results()
    assert list(saved["table"]) == [name for name, _kwargs in COMPARED] == list(saved["results"])
    assert saved["provenance"]["stages"] == {name: kwargs for name, kwargs in COMPARED}
    assert saved["questions"] == len(recall_questions())
    for name, row in saved["table"].items():
        run = saved["results"][name]
        assert run.turns == saved["turns"] and run.reply_tokens == row["reply_tokens"] == REPLY_TOKENS, name
        assert row["total_input_tokens"] == run.total_input_tokens
        assert row["max_turn_input_tokens"] == run.max_turn_input_tokens == max(run.request_tokens)
        assert (row["cache_write_tokens"], row["cache_read_tokens"]) == (
            sum(run.cache_write_tokens),
            sum(run.cache_read_tokens),
        )
        assert row["cost_usd"] == pytest.approx(run.total_cost_usd) == pytest.approx(sum(row["usd_by_kind"].values()))


def test_the_notebooks_print_the_files_and_run_only_a_short_live_version():
    """The tables of further/04 and further/06 come from the results files; the cells that run the benchmark live
    run a short version (the full run is the file's command)."""
    recall = _code("04_memory_in_production.ipynb")
    assert "recall = recall_results()" in recall["nb05-28"] and 'recall["strategies"]' in recall["nb05-29"]
    assert "measure_recall(30," in recall["f04-recall-live"]
    assert sum("measure_recall(" in source for source in recall.values()) == 1
    compare = _code("06_every_stage_measured.ipynb")
    assert "comparison = compare_results()" in compare["nb06-12"] and 'comparison["results"]' in compare["nb06-13"]
    assert "compare_strategies(30)" in compare["f06-live"]
    assert sum("compare_strategies(" in source for source in compare.values()) == 1


@pytest.mark.slow
def test_a_rerun_of_the_recall_benchmark_gives_the_files_figures():
    saved = recall_results()
    again = measure_recall(
        saved["turns"],
        budget=saved["budget"],
        summary_max_tokens=saved["summary_max_tokens"],
        memory_budget=saved["memory_budget"],
        keep_last=saved["keep_last"],
    )
    assert again["strategies"] == saved["strategies"]


@pytest.mark.slow
def test_a_rerun_of_the_compare_benchmark_gives_the_files_figures():
    saved = compare_results()
    again = compare_strategies(saved["turns"])
    for name, row in saved["table"].items():
        assert _same(again["table"][name], row), name
        assert again["results"][name].input_tokens == saved["results"][name].input_tokens, name


def _same(a: dict, b: dict) -> bool:
    """Equal, floats within 1e-9 (a float written to JSON and read back is the same float; sums may reorder)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, float) or isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b
