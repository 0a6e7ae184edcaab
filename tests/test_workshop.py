"""docs/workshop.md, the instructor's kit: every notebook and cell it names exists, every notebook is in it, its
timings table is the one scripts/time_notebooks.py wrote (with provenance) for the notebooks that exist, and every
core lesson fits a workshop: at most 45 learner minutes (markdown words / 200 + 15 s per code line + 5 min per
exercise + run time from the timings file), the core arc at most 5 hours, and the minutes table and the agenda are
what scripts/time_notebooks.py makes from the notebooks as they are now."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts.time_notebooks import (
    AGENDA_END,
    AGENDA_START,
    MAX_ARC_MINUTES,
    MAX_LEARNER_MINUTES,
    MINUTES_END,
    MINUTES_START,
    READING_WPM,
    agenda,
    all_notebooks,
    counts,
    key,
    learner_minutes,
    lesson_minutes,
    minutes_table,
    slot,
    timings_table,
)

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
    for row in results["notebooks"].values():
        assert row["passed"] and row["commit"] and row["date"]
    assert block.split("-->", 1)[1].strip() == timings_table(results["notebooks"]), (
        "re-make the tables: python -m scripts.time_notebooks --tables"
    )


def _block(start: str, end: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index(start) + len(start) : text.index(end)].strip()


def _rows() -> dict:
    return json.loads(TIMINGS.read_text(encoding="utf-8"))["notebooks"]


def test_the_minutes_table_and_the_agenda_are_computed_from_the_notebooks_as_they_are():
    assert _block(MINUTES_START, MINUTES_END) == minutes_table(_rows()), (
        "a notebook changed: re-make the tables with python -m scripts.time_notebooks --tables"
    )
    assert _block(AGENDA_START, AGENDA_END) == agenda(_rows())


def test_the_agenda_gives_each_lesson_its_minutes_and_adds_up():
    """The agenda's lesson rows are the lessons' learner minutes (rounded up to 5): their sum is the arc's."""
    table = _block(AGENDA_START, AGENDA_END)
    rows = [line.split("|") for line in table.splitlines()[2:]]
    minutes = {name: m for name, m in lesson_minutes(_rows()).items() if "/" not in name}
    lesson_rows = {
        r[2].strip().strip("`").removesuffix(".ipynb"): int(r[3])
        for r in rows
        if re.fullmatch(r"`[^`]+`", r[2].strip())
    }
    assert set(lesson_rows) == set(minutes)
    assert sum(lesson_rows.values()) == sum(slot(m) for m in minutes.values())
    assert all(lesson_rows[n] >= minutes[n] for n in minutes)
    start, end = rows[0][1].split("–")[0].strip(), rows[-1][1].split("–")[1].strip()
    total = sum(int(r[3]) for r in rows)
    assert (start, end) == ("0:00", f"{total // 60}:{total % 60:02d}"), "the times run on without gaps"


def test_the_core_arc_takes_at_most_five_hours():
    minutes = {name: m for name, m in lesson_minutes(_rows()).items() if "/" not in name}
    assert len(minutes) == 7 and sum(minutes.values()) <= MAX_ARC_MINUTES, (
        f"the core arc is {sum(minutes.values()):.0f} learner minutes (limit {MAX_ARC_MINUTES})"
    )


def test_the_readme_states_the_arcs_time():
    minutes = sum(m for name, m in lesson_minutes(_rows()).items() if "/" not in name)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = readme.split("<!-- arc:start -->", 1)[1].split("<!-- arc:end -->", 1)[0]
    assert stated == f"about {minutes / 60:.1f} hours", "python -m scripts.time_notebooks --tables writes it"


@pytest.mark.parametrize("path", CORE, ids=key)
def test_a_core_lesson_takes_at_most_45_learner_minutes(path):
    row = _rows()[key(path)]
    c = counts(path)
    minutes = learner_minutes(row["wall_s"], c)
    assert minutes <= MAX_LEARNER_MINUTES, (
        f"{key(path)}: {minutes:.0f} learner minutes ({c}, {row['wall_s']:.0f} s to run): "
        "move depth to a going-further notebook"
    )


def test_learner_minutes_follow_the_stated_formula(tmp_path):
    c = {"markdown_words": 2 * READING_WPM, "code_lines": 8, "blanks": 1, "questions": 2}
    assert learner_minutes(120, c) == pytest.approx(2 + 2 + 15 + 2)
    nb = {
        "cells": [
            {"cell_type": "markdown", "source": ["one two three"], "metadata": {}},
            {"cell_type": "code", "source": ["x = 1\n", "\n", "y = 2"], "metadata": {"nbgrader": {"solution": True}}},
            {
                "cell_type": "markdown",
                "source": ["## Exercises\n\n1. do a\n2. do b\n\nNext: 3. not one"],
                "metadata": {},
            },
        ]
    }
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert counts(path) == {"markdown_words": 15, "code_lines": 2, "blanks": 1, "questions": 2}
