"""The scale results files (docs/results/retrieval.json, load.json): provenance complete, every size of one run, the
targets recomputed from the figures, identical results, and the table of docs/benchmarks.md made from them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.bench.results import RESULTS_DIR, load_results
from helpers.bench.retrieval import verdicts
from helpers.bench.scale_table import scale_table
from helpers.retrieval.coarse import PROBE_SHARE

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- scale table: made by helpers.bench.scale_table from docs/results/retrieval.json and docs/results/load.json -->"
END = "<!-- end of scale table -->"


@pytest.mark.parametrize("name", ["retrieval", "load", "coarse"])
def test_provenance_is_complete_and_the_commit_exists(name):
    source = load_results(name)["provenance"]
    assert {"command", "commit", "date", "mode", "machine", "machine_at_end"} <= set(source)
    assert source["command"].startswith(f"python -m helpers.bench {name}") and source["mode"] in ("offline", "live")
    assert source["machine"]["cpus"] >= 1 and len(source["machine"]["load_average"]) == 3
    known = subprocess.run(["git", "cat-file", "-e", f"{source['commit']}^{{commit}}"], cwd=ROOT, capture_output=True)
    assert known.returncode == 0, f"{name}.json: commit {source['commit']} is not in this repository"


def test_every_size_was_measured_in_one_run_and_found_what_reading_every_memory_finds():
    doc = load_results("retrieval")
    sizes = [s["memories"] for s in doc["sizes"]]
    assert sizes == [1_000, 10_000, 50_000]
    for size in doc["sizes"]:
        assert size["opened_from"] == "index file" and size["identical_results"] is True
        assert size["isolation_violations"] == 0 and size["queries"] >= 100
    assert doc["targets"] == verdicts(doc["sizes"])  # the verdicts are the figures', not typed in


def test_the_coarse_lists_were_used_at_the_largest_size_only_and_measured_on_both_real_parts():
    doc = load_results("retrieval")
    used = [bool((s.get("coarse") or {}).get("used")) for s in doc["sizes"]]
    assert used == [False, False, True]  # 20,000 memories and more (COARSE_MIN_ROWS)
    for size in doc["sizes"][:2]:  # below the threshold every ranking is the exact one
        assert size["coarse"]["hybrid_top_k_identical"] == 1.0 and size["coarse"]["vector_recall_at_50"] == 1.0
    parts = load_results("coarse")["parts"]
    assert [p["part"] for p in parts] == ["tune", "report"]
    for part in parts:
        assert part["lists"] >= 8 and part["questions"] > 100 and 0 < part["hybrid_top_k_identical"] <= 1
        assert part["probe_share"] == PROBE_SHARE
    tune = {row["share"]: row for row in parts[0]["probe_sweep"]}  # the share was chosen on the tune part only
    assert min(share for share, row in tune.items() if row["recall_at_50"] >= 0.97) == PROBE_SHARE


def test_the_capped_run_held_no_more_than_its_cap():
    users = load_results("load")["users"]
    assert users["users"] == 1_000 and users["memories_per_user"] == 1_000
    capped, free = users["capped"], users["no_cap"]
    assert capped["held_mb_at_end"] <= capped["cache_mb"] and capped["users_dropped"] > 0
    assert free["users_dropped"] == 0 and free["users_held_at_end"] > capped["users_held_at_end"]


def test_the_readme_table_is_made_from_the_results_files():
    readme = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert BEGIN in readme and END in readme
    table = readme.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == scale_table(), (
        "re-make the scale table in docs/benchmarks.md: python -c 'from helpers.bench.scale_table import scale_table; print(scale_table())'"
    )


def test_the_files_are_where_the_readme_says():
    assert (RESULTS_DIR / "retrieval.json").exists() and (RESULTS_DIR / "load.json").exists()
