"""docs/workshop.md, the instructor's kit: every notebook and cell it names exists, every notebook is in it, and its
run-time table is the one scripts/time_notebooks.py wrote (with provenance) for the notebooks that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "workshop.md"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _cell_ids() -> dict[str, str]:
    return {
        cell["id"]: path.name for path in NOTEBOOKS for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
    }


def test_every_notebook_named_exists_and_every_notebook_is_named():
    text = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"\b(\d\d_[a-z0-9_]+)\.ipynb", text))
    assert named, "the kit names no notebook"
    assert named <= {p.stem for p in NOTEBOOKS}, sorted(named - {p.stem for p in NOTEBOOKS})
    assert {p.stem for p in NOTEBOOKS} <= named, "a notebook the kit does not cover"


def test_every_cell_named_exists():
    text = DOC.read_text(encoding="utf-8")
    cited = set(re.findall(r"`(nb\d\d[\w-]*)`", text))
    ranges = re.findall(r"`(nb\d\d[\w-]*)` (?:to|…) `(nb\d\d[\w-]*)`", text)
    ids = _cell_ids()
    assert len(cited) >= 10
    assert sorted(cited - set(ids)) == []
    for first, last in ranges:
        assert first in ids and last in ids


def test_the_timings_table_comes_from_the_results_file():
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("<!-- timings:start -->") : text.index("<!-- timings:end -->")]
    results = json.loads((ROOT / "docs" / "workshop_timings.json").read_text(encoding="utf-8"))
    assert results["command"].startswith("python -m scripts.time_notebooks") and results["mode"].startswith("offline")
    assert set(results["notebooks"]) == {p.stem for p in NOTEBOOKS}, "re-run python -m scripts.time_notebooks"
    for stem, row in results["notebooks"].items():
        assert row["passed"] and row["commit"] and row["date"]
        assert f"| `{stem}.ipynb` | {row['wall_s']:.0f} | {row['cpu_s']:.0f} |" in block
