"""docs/workshop.md, the instructor's kit: every notebook and cell it names exists, every notebook is in it, its
timings table is the one scripts/time_notebooks.py wrote (with provenance) for the notebooks that exist, and every
core lesson fits a workshop: at most 40 learner minutes (run time from the timings file plus reading time of the
notebook as it is now)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts.time_notebooks import MAX_LEARNER_MINUTES, READING_WPM, all_notebooks, key, learner_minutes, words

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "workshop.md"
TIMINGS = ROOT / "docs" / "workshop_timings.json"
NOTEBOOKS = all_notebooks()
CORE = [p for p in NOTEBOOKS if p.parent.name == "notebooks"]
NAMED = re.compile(r"(?<![\w/])((?:further/)?\d\d_[a-z0-9_]+)\.ipynb")
CELL = re.compile(r"`((?:nb\d\d|f\d\d)-[\w-]+)`")


def _cell_ids() -> dict[str, str]:
    return {cell["id"]: key(path) for path in NOTEBOOKS for cell in json.loads(path.read_text())["cells"]}


def test_every_notebook_named_exists_and_every_notebook_is_named():
    named = set(NAMED.findall(DOC.read_text(encoding="utf-8")))
    assert named, "the kit names no notebook"
    assert named <= {key(p) for p in NOTEBOOKS}, sorted(named - {key(p) for p in NOTEBOOKS})
    assert {key(p) for p in NOTEBOOKS} <= named, "a notebook the kit does not cover"


def test_every_cell_named_exists():
    text = DOC.read_text(encoding="utf-8")
    cited = set(CELL.findall(text))
    ranges = re.findall(r"`([\w-]+)` (?:to|…) `([\w-]+)`", text)
    ids = _cell_ids()
    assert len(cited) >= 10
    assert sorted(cited - set(ids)) == []
    for first, last in ranges:
        assert first in ids and last in ids


def test_the_timings_table_comes_from_the_results_file():
    text = DOC.read_text(encoding="utf-8")
    block = text[text.index("<!-- timings:start -->") : text.index("<!-- timings:end -->")]
    results = json.loads(TIMINGS.read_text(encoding="utf-8"))
    assert results["command"].startswith("python -m scripts.time_notebooks") and results["mode"].startswith("offline")
    assert set(results["notebooks"]) == {key(p) for p in NOTEBOOKS}, "re-run python -m scripts.time_notebooks"
    assert results["reading_wpm"] == READING_WPM
    for name, row in results["notebooks"].items():
        assert row["passed"] and row["commit"] and row["date"]
        assert f"| `{name}.ipynb` |" in block and f"| {row['wall_s']:.0f} | {row['cpu_s']:.0f} |" in block


@pytest.mark.parametrize("path", CORE, ids=key)
def test_a_core_lesson_takes_at_most_40_learner_minutes(path):
    """Run time (the timings file's wall seconds) plus reading time of every cell at READING_WPM words a minute."""
    row = json.loads(TIMINGS.read_text(encoding="utf-8"))["notebooks"][key(path)]
    minutes = learner_minutes(row["wall_s"], words(path))
    assert minutes <= MAX_LEARNER_MINUTES, (
        f"{key(path)}: {minutes:.0f} learner minutes ({words(path):,} words, {row['wall_s']:.0f} s to run): "
        "move depth to a going-further notebook"
    )
    assert f"| `{key(path)}.ipynb` | " in DOC.read_text(encoding="utf-8")


def test_learner_minutes_add_reading_to_run_time():
    assert learner_minutes(120, 2 * READING_WPM) == pytest.approx(4.0)
