"""docs/results/cost.json, which notebooks 03, 04 and 07 print from: provenance, self-consistency, and cost.md written
from it by the current code (a loaded figure must be one the benchmark wrote)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.bench.cost_pace import PACES, TTLS, print_pace
from helpers.bench.cost_report import markdown_table
from helpers.bench.cost_table import CACHE_AWARE, KINDS, OURS, RESULTS_FILE, ROWS, THEIRS, load_results
from helpers.offline import min_cacheable_tokens
from helpers.sim.scripts import recall_questions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def report() -> dict:
    return load_results()


def test_provenance_is_complete_and_the_commit_exists(report):
    source = report["provenance"]
    assert {"command", "commit", "data", "date", "mode", "reply_tokens", "seconds_per_turn"} <= set(source)
    assert source["command"].startswith("python -m helpers.bench cost") and "recall_script" in source["data"]
    known = subprocess.run(["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert known.returncode == 0, f"cost.json: commit {source['commit']} is not in this repository"


def test_the_markdown_table_is_the_json_as_the_current_code_writes_it(report):
    assert RESULTS_FILE.with_suffix(".md").read_text(encoding="utf-8") == markdown_table(report)


def test_every_row_and_checkpoint_has_its_tokens_usd_and_recall(report):
    assert list(report["strategies"]) == [label for label, *_ in ROWS]
    assert report["recall_questions"] == len(recall_questions())
    for label, row in report["strategies"].items():
        for model in report["models"]:
            cells = row["by_model"][model]
            assert sorted(map(int, cells)) == report["checkpoints"]
            for turns, cell in cells.items():
                assert set(KINDS) <= set(cell["total"]) and 0 <= cell["recall"] <= 1
                cumulative = report["cumulative_usd"][label][model]
                assert cell["total"]["usd"] == pytest.approx(cumulative[int(turns) - 1])
        assert set(row.get("layout", {})) == (set(report["models"]) if row["registry"] in CACHE_AWARE else set())


def test_the_comparison_is_the_cells_ratio_and_the_layout_reads_from_the_cache(report):
    for model in report["models"]:
        found = report["comparison"][model]
        for turns, times in found["times_cheaper_at"].items():
            ours, theirs = (report["strategies"][label]["by_model"][model][turns] for label in (OURS, THEIRS))
            assert times == pytest.approx(theirs["total"]["usd"] / ours["total"]["usd"])
            assert found["recall_at"][turns] == {OURS: ours["recall"], THEIRS: theirs["recall"]}
        layout = report["strategies"][OURS]["layout"][model]
        assert layout["minimum"] == min_cacheable_tokens(model)
        longest = str(report["checkpoints"][-1])
        if layout["breakpoints"]:  # a layout that sends breakpoints is one whose prefix the cache serves
            assert report["strategies"][OURS]["by_model"][model][longest]["total"]["cache_read"] > 0


def test_pace_and_ttl_cover_every_case_and_agree_with_the_main_table(report):
    sweep = report["pace_and_ttl"]
    turns = sweep["turns"]
    for model in report["models"]:
        cases = sweep["by_model"][model]
        assert [(c["seconds_per_turn"], c["ttl"]) for c in cases] == [(p, t) for p in PACES for t in TTLS]
        naive = report["cumulative_usd"]["naive"][model][turns - 1]
        for case in cases:
            assert case["naive_usd"] == pytest.approx(naive)
            assert case["times_cheaper"] == pytest.approx(case["naive_caching_usd"] / case["bounded_cache_aware_usd"])
            assert case["caching_pays_for_naive"] == (case["naive_caching_usd"] < naive)
        main = cases[0]  # 30 s and 5 minutes: the main table's own runs
        assert main["naive_caching_usd"] == pytest.approx(report["cumulative_usd"][THEIRS][model][turns - 1])
        assert main["bounded_cache_aware_usd"] == pytest.approx(report["cumulative_usd"][OURS][model][turns - 1])


def test_print_pace_prints_one_line_per_case_and_naive_only_leaves_out_the_bounded_columns(report, capsys):
    cases = [c for model in report["models"] for c in report["pace_and_ttl"]["by_model"][model]]
    print_pace(report)
    full = capsys.readouterr().out.splitlines()
    print_pace(report, naive_only=True)
    naive = capsys.readouterr().out.splitlines()
    rows = [line for line in full if line.split()[0].replace(".", "").isdigit()]
    assert len(rows) == len(cases) and f"{cases[0]['bounded_cache_aware_usd']:.3f}" in rows[0]
    assert len(naive) == len(full) and "bounded" not in "\n".join(naive) and "bounded" in full[1]
