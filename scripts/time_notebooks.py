"""Build-time tool (not part of the package): time every notebook under nbval, offline, for docs/workshop.md.

Each notebook (the core lessons, then notebooks/further/) runs alone, top to bottom, in a fresh pytest process
(`pytest --nbval-lax notebooks/NN_x.ipynb`), with the settings the test suite uses (offline model, a throwaway data
dir). Writes docs/workshop_timings.json with its provenance: the command, the commit, the date, the CPU count and the
load average before and after each run (on a busy machine the wall times are longer; CPU seconds show the work
itself). Beside the run time it records what a learner reads: the words of every cell (markdown and code, exercises
included) and the reading time at READING_WPM words a minute; **learner minutes** are the two added, the figure
tests/test_workshop.py holds every core lesson to (at most 40).

    python -m scripts.time_notebooks            # all notebooks
    python -m scripts.time_notebooks 04 05      # some of them (the others keep their last figures)
    python -m scripts.time_notebooks further/02
"""

from __future__ import annotations

import datetime as dt
import json
import os
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
READING_WPM = 200  # words a minute, for prose and code read closely
MAX_LEARNER_MINUTES = 40  # a core lesson's limit (issue 32)


def all_notebooks() -> list[Path]:
    """The core lessons in order, then the going-further notebooks."""
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) + sorted((NOTEBOOKS / "further").glob("[0-9][0-9]_*.ipynb"))


def key(path: Path) -> str:
    """A notebook's name in the timings file: `04_bounded_memory_mongodb`, `further/02_prompt_caching`."""
    return path.relative_to(NOTEBOOKS).with_suffix("").as_posix()


def words(path: Path) -> int:
    """Every whitespace-separated word of every cell, markdown and code."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return sum(len("".join(c["source"]).split()) for c in cells)


def learner_minutes(run_seconds: float, word_count: int) -> float:
    """Run time plus reading time at READING_WPM."""
    return run_seconds / 60 + word_count / READING_WPM


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
    write_table(rows)
    return 0 if all(r["passed"] for r in rows.values()) else 1


def table_row(name: str, r: dict) -> str:
    """One row of the table: the figures from the timings file, the words counted from the notebook as it is."""
    path = NOTEBOOKS / f"{name}.ipynb"
    n_words = words(path)
    cells = len(json.loads(path.read_text(encoding="utf-8"))["cells"])
    return (
        f"| `{name}.ipynb` | {cells} | {n_words:,} | {n_words / READING_WPM:.0f} | {r['wall_s']:.0f} | "
        f"{r['cpu_s']:.0f} | {learner_minutes(r['wall_s'], n_words):.0f} | {r['load_before']:.1f} → "
        f"{r['load_after']:.1f} | {'yes' if r['passed'] else 'NO'} | {r['commit']}, {r['date'][:16]} |"
    )


def write_table(rows: dict[str, dict], doc: Path = DOC) -> None:
    """Copy the figures into docs/workshop.md, between its timings markers."""
    lines = [
        "| notebook | cells | words | reading min | wall s | CPU s | learner min | load before → after | passed | "
        "commit, date (UTC) |",
        "|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    lines += [table_row(name, r) for name, r in rows.items()]
    total_wall = sum(r["wall_s"] for r in rows.values())
    total_cpu = sum(r["cpu_s"] for r in rows.values())
    lines.append(f"| all | | | | {total_wall:.0f} | {total_cpu:.0f} | | | | |")
    text = doc.read_text(encoding="utf-8")
    start, end = text.index(START) + len(START), text.index(END)
    doc.write_text(text[:start] + "\n" + "\n".join(lines) + "\n" + text[end:], encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
