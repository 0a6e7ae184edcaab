"""Build-time tool (not part of the package): time every notebook under nbval, offline, and compute learner minutes.

Each notebook (the core lessons, then notebooks/further/) runs alone, top to bottom, in a fresh pytest process
(`pytest --nbval-lax notebooks/NN_x.ipynb`), with the settings the test suite uses (offline model, a throwaway data
dir). Writes docs/workshop_timings.json with its provenance: the command, the commit, the date, the CPU count and the
load average before and after each run (on a busy machine the wall times are longer; CPU seconds show the work
itself).

**Learner minutes** are computed from the notebook as it is now, plus its measured run time:

    markdown words / 200  +  15 s per code line  +  5 min per exercise  +  run time

where a code line is a non-blank line of a code cell (read closely, or typed), and an exercise is a blank the learner
fills (an nbgrader solution cell) or a numbered question under the lesson's "## Exercises". The tables and the
agendas of docs/workshop.md are written from these figures (between their markers), so they cannot go stale:
tests/test_workshop.py recomputes them.

    python -m scripts.time_notebooks            # run all notebooks, then write the tables
    python -m scripts.time_notebooks 04 05      # some of them (the others keep their last figures)
    python -m scripts.time_notebooks --tables   # only rewrite docs/workshop.md's tables from the notebooks as they are
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "workshop_timings.json"
DOC = ROOT / "docs" / "workshop.md"
START, END = "<!-- timings:start -->", "<!-- timings:end -->"
READING_WPM = 200  # markdown words a minute
CODE_LINE_SECONDS = 15  # a line of code read closely (or typed)
EXERCISE_MINUTES = 5  # an exercise done, not read
MAX_LEARNER_MINUTES = 45  # a core lesson's limit (issue 38)
MAX_ARC_MINUTES = 300  # the seven core lessons together
MINUTES_START, MINUTES_END = "<!-- minutes:start -->", "<!-- minutes:end -->"
AGENDA_START, AGENDA_END = "<!-- agenda:start -->", "<!-- agenda:end -->"


def all_notebooks() -> list[Path]:
    """The core lessons in order, then the going-further notebooks."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted((NOTEBOOKS / "further").glob("[0-9][0-9]_*.ipynb"))


def key(path: Path) -> str:
    """A notebook's name in the timings file: `04_bounded_memory_mongodb`, `further/02_prompt_caching`."""
    return path.relative_to(NOTEBOOKS).with_suffix("").as_posix()


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _text(cell: dict) -> str:
    return "".join(cell["source"])


def counts(path: Path) -> dict[str, int]:
    """What a learner spends time on in a notebook: markdown words, code lines, blanks to fill, questions to do."""
    cells = _cells(path)
    markdown = [_text(c) for c in cells if c["cell_type"] == "markdown"]
    code = [_text(c) for c in cells if c["cell_type"] == "code"]
    blanks = sum(1 for c in cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
    questions = 0
    for text in markdown:
        if "## Exercises" in text:
            body = text.split("## Exercises", 1)[1]
            questions += len(re.findall(r"^\d+\. ", body, flags=re.MULTILINE))
    return {
        "markdown_words": sum(len(t.split()) for t in markdown),
        "code_lines": sum(1 for t in code for line in t.splitlines() if line.strip()),
        "blanks": blanks,
        "questions": questions,
    }


def learner_minutes(run_seconds: float, c: dict[str, int]) -> float:
    """markdown words / 200 + 15 s per code line + 5 min per exercise (blank or question) + run time."""
    return (
        c["markdown_words"] / READING_WPM
        + c["code_lines"] * CODE_LINE_SECONDS / 60
        + (c["blanks"] + c["questions"]) * EXERCISE_MINUTES
        + run_seconds / 60
    )


def time_one(path: Path) -> dict:
    load_before = os.getloadavg()[0]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    return {
        "notebook": path.relative_to(NOTEBOOKS).as_posix(),
        "passed": done.returncode == 0,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "pytest": tail[0],
    }


def main(argv: list[str]) -> int:
    if argv == ["--tables"]:
        write_tables(json.loads(OUT.read_text())["notebooks"])
        return 0
    wanted = set(argv)
    notebooks = [p for p in all_notebooks() if not wanted or any(key(p).startswith(w) for w in wanted)]
    old = json.loads(OUT.read_text()) if OUT.exists() else {"notebooks": {}}
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    rows = dict(old.get("notebooks", {}))
    for path in notebooks:
        row = time_one(path)
        row.update(commit=commit, date=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
        rows[key(path)] = row
        print(json.dumps(row), flush=True)
    order = [key(p) for p in all_notebooks()]
    rows = {k: rows[k] for k in order if k in rows}
    OUT.write_text(
        json.dumps(
            {
                "command": "python -m scripts.time_notebooks " + " ".join(argv),
                "mode": "offline (the test suite's settings: no key, throwaway data dir)",
                "cpus": os.cpu_count(),
                "reading_wpm": READING_WPM,
                "notebooks": rows,
            },
            indent=1,
        )
        + "\n"
    )
    write_tables(rows)
    return 0 if all(r["passed"] for r in rows.values()) else 1


def timings_table(rows: dict[str, dict]) -> str:
    """The measured run times, from the timings file."""
    lines = [
        "| notebook | cells | wall s | CPU s | load before → after | passed | measured (UTC) |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for name, r in rows.items():
        cells = len(_cells(NOTEBOOKS / f"{name}.ipynb"))
        lines.append(
            f"| `{name}.ipynb` | {cells} | {r['wall_s']:.0f} | {r['cpu_s']:.0f} | {r['load_before']:.1f} → "
            f"{r['load_after']:.1f} | {'yes' if r['passed'] else 'NO'} | {r['date'][:16]} |"
        )
    lines.append(
        f"| all | | {sum(r['wall_s'] for r in rows.values()):.0f} | {sum(r['cpu_s'] for r in rows.values()):.0f} | | | |"
    )
    return "\n".join(lines)


def lesson_minutes(rows: dict[str, dict]) -> dict[str, float]:
    """Learner minutes of every notebook with a measured run time, by the formula above."""
    return {name: learner_minutes(r["wall_s"], counts(NOTEBOOKS / f"{name}.ipynb")) for name, r in rows.items()}


def minutes_table(rows: dict[str, dict]) -> str:
    """Learner minutes per notebook, from the notebook as it is now and its measured run time."""
    lines = [
        "| notebook | markdown words | code lines | blanks + questions | run s | learner min |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    minutes = lesson_minutes(rows)
    for name, r in rows.items():
        c = counts(NOTEBOOKS / f"{name}.ipynb")
        lines.append(
            f"| `{name}.ipynb` | {c['markdown_words']:,} | {c['code_lines']} | {c['blanks']} + {c['questions']} | "
            f"{r['wall_s']:.0f} | {minutes[name]:.0f} |"
        )
    core = sum(m for name, m in minutes.items() if "/" not in name)
    lines.append(f"| the core arc (01-07) | | | | | {core:.0f} |")
    return "\n".join(lines)


def slot(minutes: float) -> int:
    """A lesson's slot in an agenda: its learner minutes, rounded up to 5."""
    return 5 * math.ceil(minutes / 5)


def agenda(rows: dict[str, dict]) -> str:
    """The core arc in a day: a setup check, each lesson for its learner minutes (rounded up to 5), breaks."""
    minutes = {name: m for name, m in lesson_minutes(rows).items() if "/" not in name}
    items = [("setup check: everyone runs the first cells of `01_goldfish_stateless.ipynb` (mode line printed)", 10)]
    for i, (name, m) in enumerate(minutes.items()):
        items.append((f"`{name}.ipynb`", slot(m)))
        if i in (2, 4):
            items.append(("break" if i == 2 else "lunch", 15 if i == 2 else 45))
    lines, t = ["| time | what | minutes |", "|---|---|---:|"], 0
    for what, length in items:
        lines.append(f"| {t // 60}:{t % 60:02d}–{(t + length) // 60}:{(t + length) % 60:02d} | {what} | {length} |")
        t += length
    return "\n".join(lines)


def _replace(text: str, start: str, end: str, block: str) -> str:
    a, b = text.index(start) + len(start), text.index(end)
    return text[:a] + "\n" + block + "\n" + text[b:]


def write_tables(rows: dict[str, dict], doc: Path = DOC) -> None:
    """Write the run times, the learner minutes and the agenda into docs/workshop.md, between their markers."""
    text = doc.read_text(encoding="utf-8")
    text = _replace(text, START, END, timings_table(rows))
    text = _replace(text, MINUTES_START, MINUTES_END, minutes_table(rows))
    text = _replace(text, AGENDA_START, AGENDA_END, agenda(rows))
    doc.write_text(text, encoding="utf-8")
    arc = sum(m for name, m in lesson_minutes(rows).items() if "/" not in name)
    readme = ROOT / "README.md"
    old = readme.read_text(encoding="utf-8")
    head, rest = old.split("<!-- arc:start -->", 1)
    readme.write_text(
        f"{head}<!-- arc:start -->about {arc / 60:.1f} hours<!-- arc:end -->{rest.split('<!-- arc:end -->', 1)[1]}",
        encoding="utf-8",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
