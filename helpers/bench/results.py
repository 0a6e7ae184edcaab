"""Results files the benchmarks write (docs/results/*.json): load one, and read a recall table with n and intervals. Tools for further/05_long_conversations, "Long conversations, measured".

A notebook never types a result in: it loads the file a benchmark wrote (with its provenance: command, commit,
data, date, offline/live) and prints the table from it; `tests/bench/test_results_files.py` checks each file is
consistent with itself and with the data it names. Intervals are 95%: Wilson's for a share of 0/1 outcomes, the
normal approximation for a mean of fractional scores, and for a difference between two methods the paired normal
interval over the same questions.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path

__all__ = [
    "RESULTS_DIR",
    "machine",
    "run_provenance",
    "write_results_file",
    "LONGMEM_NAMES",
    "load_results",
    "interval",
    "recall_rows",
    "paired_difference",
    "paired_difference_by",
    "format_recall_rows",
]

RESULTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "results"
Z95 = 1.959964
LONGMEM_NAMES = {
    "full": "whole transcript",
    "last_turns": "last turns",
    "bm25": "BM25 over raw turns",
    "embeddings": "MiniLM over raw turns",
    "hybrid": "hybrid over raw turns",
    "bounded": "bounded stage",
    "vector": "vector stage, one budget",
}


def load_results(name: str) -> dict:
    """The results file docs/results/NAME.json; a clear error naming the command to run when it is missing."""
    path = RESULTS_DIR / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing; the benchmark writes it with --out (see docs/results/README.md)")
    return json.loads(path.read_text(encoding="utf-8"))


def machine() -> dict:
    """The machine a benchmark ran on, and how busy it was: CPUs, load average (1, 5, 15 min), platform."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in load] if load else None,
        "platform": platform.platform(terse=True),
        "python": platform.python_version(),
    }


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=RESULTS_DIR.parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def run_provenance(command: str, **extra: object) -> dict:
    """Where a run's figures come from: command, commit (and whether the tree had other changes), date, mode
    (offline or live), the machine and its load average at the start; add `finished` with `machine()` at the end."""
    from helpers.config import load_settings

    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "command": command,
        "commit": _git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(status) if status is not None else None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": load_settings().mode,
        "machine": machine(),
        **extra,
    }


def write_results_file(path: str | Path, doc: dict) -> Path:
    """Write a results file (JSON, one space indent, UTF-8), creating its folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def interval(values: list[float]) -> tuple[float, float]:
    """95% interval of the mean of `values`: Wilson's for 0/1 outcomes, else mean ± 1.96 standard errors."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = sum(values) / n
    if all(v in (0, 1) for v in values):
        centre = (mean + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
        half = Z95 * math.sqrt(mean * (1 - mean) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
        return max(0.0, centre - half), min(1.0, centre + half)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean - Z95 * sd / math.sqrt(n), mean + Z95 * sd / math.sqrt(n)


def _scores(row: dict) -> dict[tuple[str, str], float]:
    if "details" not in row:
        raise ValueError(f"row {row['method']} @ {row['budget']} has no per-question details (run with --details)")
    return {(d["user"], d["qid"]): d["recalled"] for d in row["details"]}


def recall_rows(part: dict) -> list[dict]:
    """One row per (method, budget): recall, n, its 95% interval and tokens per question, in the file's order."""
    out = []
    for row in part["rows"]:
        scores = list(_scores(row).values())
        low, high = interval(scores)
        out.append(
            {
                "method": row["method"],
                "budget": row["budget"],
                "recall": row["recall"],
                "n": len(scores),
                "low": low,
                "high": high,
                "tokens_per_question": row["tokens_per_question"],
            }
        )
    return out


def paired_difference(part: dict, a: str, b: str, budget: int) -> dict:
    """Recall of method `a` minus method `b` at `budget` over the same questions: mean, 95% interval, n."""
    rows = {(r["method"], r["budget"]): r for r in part["rows"]}
    first, second = _scores(rows[(a, budget)]), _scores(rows[(b, budget)])
    keys = sorted(set(first) & set(second))
    diffs = [first[k] - second[k] for k in keys]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)) if len(diffs) > 1 else 0.0
    half = Z95 * sd / math.sqrt(len(diffs))
    return {
        "a": a,
        "b": b,
        "budget": budget,
        "difference": mean,
        "low": mean - half,
        "high": mean + half,
        "n": len(diffs),
    }


def paired_difference_by(part: dict, a: str, b: str, budget: int, key: str = "user") -> dict[str, float]:
    """Recall of `a` minus `b` at `budget`, per group of questions (`key` of each question's details: "user" is the
    conversation). Questions of one conversation are not independent, so a gap that holds in every conversation is
    a different claim from an interval over the pooled questions: report both, with the number of groups."""
    rows = {(r["method"], r["budget"]): r for r in part["rows"]}
    groups: dict[str, list[float]] = {}
    second = {(d["user"], d["qid"]): d for d in rows[(b, budget)]["details"]}
    for d in rows[(a, budget)]["details"]:
        other = second.get((d["user"], d["qid"]))
        if other is not None:
            groups.setdefault(str(d[key]), []).append(d["recalled"] - other["recalled"])
    return {group: sum(diffs) / len(diffs) for group, diffs in sorted(groups.items())}


def format_recall_rows(rows: list[dict], names: dict[str, str] | None = None) -> str:
    """The rows as a plain-text table: budget, method, recall [95% interval], n, tokens per question."""
    names = LONGMEM_NAMES if names is None else names
    lines = [
        f"{'budget':>6}  {'context per question':<28} {'answer in request':>17}  {'95% interval':>13} {'n':>4} "
        f"{'tokens/q':>9}"
    ]
    for r in sorted(rows, key=lambda r: r["budget"] or 0):
        lines.append(
            f"{r['budget'] or '-':>6}  {names.get(r['method'], r['method']):<28} {r['recall']:>17.1%}  "
            f"{r['low']:>6.1%}-{r['high']:<6.1%} {r['n']:>4} {r['tokens_per_question']:>9,.0f}"
        )
    return "\n".join(lines)
