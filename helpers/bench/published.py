"""Plumbing: every published results file (docs/results/), the bench command that writes it and the modules whose code determines its numbers; `python -m helpers.bench all` regenerates them from a clean tree.

A results file is trusted only when it says where it came from: `provenance` records the command, the commit, the
date, that the tree was clean (`clean_tree`: no change to a tracked file before or after the run, HEAD unchanged),
the modules it measures (`measures`, from PUBLISHED) and the command that regenerates it (`regenerate`).
`tests/bench/test_provenance.py` fails when a file lacks these, came from a dirty tree, or is older than the last
commit that changed a module it measures (`stale`): then `python -m helpers.bench all --only NAME` rewrites it.

"Measures" lists the code that determines the numbers, not everything the bench imports: the bench module itself
(what it runs and how it counts), the memory and retrieval code under test, the stand-in model (helpers/offline,
whose replies, summaries and extractions the offline runs are made of), and the database code where a timing
includes it. Plumbing (argument parsing, writing JSON, helpers/config) is left out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from helpers.bench.results import RESULTS_DIR

__all__ = ["Published", "PUBLISHED", "LOCOMO_ENV", "stale", "last_change", "add_all", "stamp"]

ROOT = RESULTS_DIR.parents[1]
LOCOMO_ENV = "LOCOMO_TUNE_JSON"  # where the LoCoMo tuning file lies (never committed: CC BY-NC)
# the shared data folder next to the checkout (or next to its worktrees' folder)
LOCOMO_CANDIDATES = tuple(base / "shared" / "data" / "locomo" / "locomo_tune.json" for base in ROOT.parents[:2])

# The stand-in model: every offline reply, summary and extraction; the prompts it is sent.
MODEL = ("helpers/offline", "helpers/llm.py", "helpers/prompts.py")
# The memory stages and what they retrieve and count with.
MEMORY = ("helpers/memory", "helpers/retrieval", "helpers/tokens.py", "helpers/conversation.py")
# Search alone (the retrieval and coarse benches): every retrieval module but inject.py, which packs a request.
SEARCH = tuple(
    f"helpers/retrieval/{name}.py"
    for name in (
        "__init__", "atlas", "bm25", "cache", "changes", "coarse", "columns", "embeddings", "index", "lookups",
        "minilm", "names", "postings", "ranking", "schema", "snapshot", "users", "writes",
    )
)  # fmt: skip
# The simulated chats the cost, recall and compare benches run.
SIM = ("helpers/sim",)
LONGMEM = ("helpers/bench/longmem", "helpers/bench/scoring.py", "helpers/tools/chat.py")


@dataclass(frozen=True)
class Published:
    """One results file: the bench argument lists that write it (in order), what it measures, and its run time
    as last measured (minutes, wall, on the shared 2-core machine; a guide for `all`, not a claim: the files'
    `wall_seconds` are the record; 2026-12-06 under load average 8-14, cost and load from their last runs)."""

    name: str
    runs: tuple[tuple[str, ...], ...]
    measures: tuple[str, ...]
    minutes: float
    companions: tuple[str, ...] = ()  # other files the same run writes (cost.md)
    locomo: bool = False  # needs the LoCoMo tuning file


PUBLISHED: dict[str, Published] = {
    p.name: p
    for p in (
        Published(
            "retrieval.json",
            (("retrieval", "--memories", "1000,10000,50000", "--approximate", "--out", "{out}"),),
            (
                "helpers/bench/retrieval.py",
                "helpers/bench/latency.py",
                "helpers/bench/synthetic.py",
                *SEARCH,
                "helpers/db/store.py",  # the timed reads go through the real local server's store
                "helpers/memory/facts_worker.py",  # latency_summary: the p50/p95 reported
            ),
            27,
        ),
        Published(
            "coarse.json",
            (("coarse", "--data", "{locomo}", "--out", "{out}"),),
            (
                "helpers/bench/coarse_real.py",
                "helpers/bench/latency.py",
                "helpers/bench/longmem/locomo.py",
                *SEARCH,
            ),
            9,
            locomo=True,
        ),
        Published(
            "recall.json",
            (
                (
                    "recall",
                    "--turns",
                    "150",
                    "--budget",
                    "300",
                    "--summary-max-tokens",
                    "120",
                    "--memory-budget",
                    "300",
                    "--out",
                    "{out}",
                ),
            ),
            ("helpers/bench/recall.py", "helpers/bench/scoring.py", *SIM, *MODEL, *MEMORY),
            1.5,
        ),
        Published(
            "compare.json",
            (("compare", "--turns", "150", "--out", "{out}"),),
            ("helpers/bench/compare.py", "helpers/bench/scoring.py", "helpers/pricing.py", *SIM, *MODEL, *MEMORY),
            3.2,
        ),
        Published(
            "memory_kinds.json",
            (("kinds", "--turns", "40", "320"),),  # writes docs/results/memory_kinds.json itself: 320 turns compacts
            (
                "helpers/bench/kinds.py",
                "helpers/pricing.py",
                "helpers/memory_tool",
                *SIM,
                *MODEL,
                *MEMORY,
            ),
            5.0,
        ),
        Published(
            "longmem_generated.json",
            (
                (
                    "longmem",
                    "--split",
                    "report",
                    "--budgets",
                    "1000,2000,4000",
                    "--methods",
                    "full,last_turns,bm25,embeddings,hybrid,vector",
                    "--details",
                    "--out",
                    "{out}",
                ),
            ),
            (*LONGMEM, *SIM, *MODEL, *MEMORY),
            20,
        ),
        Published(
            "longmem_locomo.json",
            tuple(
                (
                    "longmem",
                    "--data",
                    "{locomo}",
                    "--split",
                    split,
                    "--methods",
                    "full,last_turns,bm25,embeddings,hybrid,vector",
                    "--out",
                    "{out}",
                )
                for split in ("tune", "report")
            ),
            (*LONGMEM, *SIM, *MODEL, *MEMORY),
            30,
            locomo=True,
        ),
        Published(
            "cost.json",
            (("cost", "--json", "--jobs", "2", "--no-progress", "--out", "{out}"),),
            (
                "helpers/bench/cost.py",
                "helpers/bench/cost_table.py",
                "helpers/bench/same_batches.py",
                "helpers/bench/cost_pace.py",
                "helpers/bench/cost_floor.py",
                "helpers/bench/cost_report.py",
                "helpers/pricing.py",
                "helpers/memory_tool",
                *SIM,
                *MODEL,
                *MEMORY,
            ),
            45,
            companions=("cost.md",),
        ),
        Published(
            "load.json",
            (("load", "--users", "1000", "--memories", "1000", "--out", "{out}"),),
            (
                "helpers/bench/load.py",
                "helpers/bench/users.py",
                "helpers/bench/common.py",
                "helpers/db",
                "helpers/tools/consistency.py",
                *SIM,
                *MODEL,
                *MEMORY,
            ),
            52,
        ),
    )
}


# Files this checkout knows are out of date: written before a later change to a module they measure, or before
# provenance existed, and too long to re-run in the session that changed those modules (`python -m helpers.bench all
# --stale` re-runs them). tests/bench/test_provenance.py holds the
# list to the truth both ways: a file named here must really be stale, so a regenerated file must leave the list, and
# every file not named here must be fresh and fully stamped.
OUT_OF_DATE: dict[str, str] = {}  # none: every results file was regenerated after the last change it measures


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=30)


def last_change(paths: tuple[str, ...]) -> str | None:
    """The last commit (hash) that changed any of `paths`, or None if none did (or git is missing)."""
    done = _git("log", "-1", "--format=%H", "--", *paths)
    return done.stdout.strip() or None if done.returncode == 0 else None


def stale(provenance: dict, measures: tuple[str, ...]) -> str | None:
    """Why a results file made at `provenance["commit"]` no longer measures the current code, or None: the last
    commit that changed a module it measures must be an ancestor of (or be) the commit it was made at."""
    commit = provenance.get("commit")
    if not commit or _git("cat-file", "-e", f"{commit}^{{commit}}").returncode:
        return f"its commit {commit} is not in this repository's history"
    last = last_change(measures)
    if last and _git("merge-base", "--is-ancestor", last, commit).returncode:
        subject = _git("log", "-1", "--format=%h %s", last).stdout.strip()[:120]
        return f"made at {commit[:10]}, before {subject!r} changed a module it measures"
    return None


def _tracked_changes() -> str:
    """Changes to tracked files outside docs/results/ (the files `all` itself writes, and removes before a run)."""
    outputs = f":(exclude){RESULTS_DIR.relative_to(ROOT).as_posix()}"
    return _git("status", "--porcelain", "--untracked-files=no", "--", ".", outputs).stdout.strip()


def _head() -> str:
    return _git("rev-parse", "HEAD").stdout.strip()


def stamp(path: Path, entry: Published, commands: list[str], commit: str, clean: bool, seconds: float) -> dict:
    """Record in the file's top-level `provenance` what `all` knows about the run: command(s), commit, clean tree,
    what it measures, how to regenerate it, the wall time. A file with parts (longmem) gets a top-level one too."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    source = doc.get("provenance")
    if source is None:  # longmem writes one provenance per part: the file's own comes first
        parts = list(doc.get("parts", {}).values())
        first = parts[0]["provenance"] if parts else {}
        source = {"date": first.get("date"), "mode": first.get("mode")}
        doc = {"provenance": source, **doc}
    source.update(
        {
            "command": " && ".join(commands),
            "commit": commit,
            "clean_tree": clean,
            "uncommitted_changes": not clean,
            "measures": list(entry.measures),
            "regenerate": f"python -m helpers.bench all --only {entry.name.removesuffix('.json')}",
            "wall_seconds": round(seconds),
        }
    )
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc


def _locomo(args: argparse.Namespace) -> Path:
    given = args.locomo or os.environ.get(LOCOMO_ENV)
    return Path(given) if given else next((p for p in LOCOMO_CANDIDATES if p.is_file()), LOCOMO_CANDIDATES[0])


def run_all(args: argparse.Namespace) -> int:
    """`all`: run the bench command of every published file (or --only some) from a clean tree, then stamp it."""
    names = [n.removesuffix(".json") for n in PUBLISHED]
    only = [n.strip().removesuffix(".json") for n in args.only.split(",")] if args.only else names
    unknown = sorted(set(only) - set(names))
    if unknown:
        print(f"error: no published file {', '.join(unknown)} (known: {', '.join(names)})", file=sys.stderr)
        return 2
    chosen = [PUBLISHED[n + ".json"] for n in names if n in only]
    if args.stale:
        chosen = [e for e in chosen if _why_rerun(e)]
    if args.list:
        for e in chosen:
            print(f"{e.name:<24} ~{e.minutes:>4g} min  measures {', '.join(e.measures)}")
        return 0
    if _tracked_changes():
        print("error: the tree has uncommitted changes; commit them first (a results file names its commit)")
        return 2
    locomo = _locomo(args)
    if any(e.locomo for e in chosen) and not locomo.is_file():
        print(f"error: LoCoMo tuning file not found at {locomo}; pass --locomo PATH or set {LOCOMO_ENV}")
        return 2
    for entry in chosen:
        out = RESULTS_DIR / entry.name
        relative = out.relative_to(ROOT)  # the command recorded names the repository's path, not this machine's
        commit, commands, started = _head(), [], time.monotonic()
        print(f"== {entry.name} (last run took ~{entry.minutes:g} min)", flush=True)
        out.unlink(missing_ok=True)  # longmem adds parts to an existing file: start empty
        for argv in entry.runs:
            argv = [a.format(out=relative, locomo=locomo) for a in argv]
            commands.append("python -m helpers.bench " + " ".join(argv))
            print("+", commands[-1], flush=True)
            done = subprocess.run([sys.executable, "-m", "helpers.bench", *argv], cwd=ROOT, stdout=subprocess.DEVNULL)
            if done.returncode:
                print(f"error: {commands[-1]} failed (exit {done.returncode})", file=sys.stderr)
                return done.returncode
        clean = not _tracked_changes() and _head() == commit
        doc = stamp(out, entry, commands, commit, clean, time.monotonic() - started)
        if "cost.md" in entry.companions:  # the table names the provenance: render it from the stamped file
            from helpers.bench.cost_report import markdown_table

            (RESULTS_DIR / "cost.md").write_text(markdown_table(doc), encoding="utf-8")
        print(f"   wrote {out} in {time.monotonic() - started:,.0f} s", flush=True)
    if any(e.name.startswith("longmem") for e in chosen):
        from helpers.bench.longmem_page import write_page

        print(f"   wrote {write_page()} from the longmem results files", flush=True)
    return 0


def _why_rerun(entry: Published) -> str | None:
    path = RESULTS_DIR / entry.name
    if not path.exists():
        return "missing"
    source = json.loads(path.read_text(encoding="utf-8")).get("provenance") or {}
    if source.get("clean_tree") is not True or source.get("measures") != list(entry.measures):
        return "no provenance from `all`"
    return stale(source, entry.measures)


def add_all(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "all",
        help="regenerate every published results file (docs/results/) from a clean tree",
        description="Run the bench command of each file under docs/results/ (PUBLISHED in helpers/bench/published.py) "
        "at the current commit, refusing a tree with uncommitted changes, and record its provenance.",
    )
    p.add_argument("--only", default=None, metavar="NAME,...", help="only these files (e.g. retrieval,coarse)")
    p.add_argument("--stale", action="store_true", help="only the files the provenance test would reject")
    p.add_argument("--list", action="store_true", help="list the chosen files, their run time and what they measure")
    p.add_argument("--locomo", default=None, metavar="PATH", help=f"LoCoMo tuning file (default ${LOCOMO_ENV})")
    p.set_defaults(func=run_all)
