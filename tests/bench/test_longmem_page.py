"""docs/longmem.md is generated from the current longmem results files (issue 42): it cannot claim a figure the
files do not hold."""

from __future__ import annotations

import json

from helpers.bench.longmem_page import PAGE, render
from helpers.bench.results import RESULTS_DIR


def test_the_page_is_what_the_results_files_say():
    assert PAGE.read_text(encoding="utf-8") == render(), (
        "docs/longmem.md drifted from docs/results/longmem_*.json: python -m helpers.bench.longmem_page"
    )


def test_the_page_reads_each_vector_figure_and_its_verdict_from_the_file():
    part = json.loads((RESULTS_DIR / "longmem_generated.json").read_text(encoding="utf-8"))["parts"]["report"]
    page = render().split("### Generated conversations: report part")[1]
    for budget in part["budgets"]:
        rows = {r["method"]: r for r in part["rows"] if r["budget"] == budget}
        best = max(("bm25", "embeddings", "hybrid"), key=lambda m: rows[m]["recall"])
        line = next(x for x in page.splitlines() if x.startswith(f"- {budget:,} tokens: vector"))
        assert f"vector {rows['vector']['recall']:.1%}" in line and f"{rows[best]['recall']:.1%}" in line
        above = rows["vector"]["recall"] > rows[best]["recall"]
        assert ("**below**" not in line) or not above  # a verdict never contradicts the file's recalls
        assert ("**above**" not in line) or above
