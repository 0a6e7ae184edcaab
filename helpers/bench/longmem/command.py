"""The `longmem` benchmark command: recall vs raw-turn baselines on long dated conversations, per token budget. Tools for further/05_long_conversations, "Long conversations, measured"."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from helpers.bench.longmem.data import SPLITS
from helpers.bench.longmem.locomo import TUNE_IDS, file_sha256, locomo_split, read_locomo
from helpers.bench.longmem.methods import format_markdown, format_table, load_split, run_longmem
from helpers.config import load_settings

__all__ = ["run_longmem_cmd", "add_longmem", "provenance", "write_results"]


def _budget_list(text: str) -> tuple[int, ...]:
    """An argparse type: comma-separated positive token budgets, e.g. 1000,2000,4000."""
    try:
        budgets = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of whole numbers") from None
    if not budgets or min(budgets) < 1:
        raise argparse.ArgumentTypeError(f"budgets must be positive whole numbers, got {text!r}")
    return budgets


def _conversations(args: argparse.Namespace) -> list:
    """The generated corpus's split, or with --data the real conversations of that split (helpers.bench.longmem.locomo)."""
    if args.data is None:
        return load_split(args.split)
    return locomo_split(read_locomo(args.data), args.split)


def _commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(args: argparse.Namespace, argv: list[str] | None = None) -> dict:
    """Where the figures come from: command, commit, data (path, sha256), date, offline or live, split."""
    settings = load_settings()
    data = (
        {"generated": "helpers.bench.longmem.data", "split": list(SPLITS[args.split])}
        if args.data is None
        else {
            "path": str(args.data),
            "sha256": file_sha256(args.data),
            "tune": list(TUNE_IDS),
            "report": "every other sample",
        }
    )
    return {
        "command": "python -m helpers.bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "commit": _commit(),
        "data": data,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": settings.mode,
        "split": args.split,
    }


def run_longmem_cmd(args: argparse.Namespace) -> int:
    """`longmem`: recall and tokens per question on long dated conversations, every method at the same budgets."""
    methods = tuple(m.strip() for m in args.methods.split(",")) if args.methods else None
    progress = (lambda msg: print(msg, file=sys.stderr, flush=True)) if args.progress else None
    source = provenance(args) if args.out else None  # the commit the run starts from, not the one it ends at
    try:
        kwargs = {"methods": methods} if methods else {}
        result = run_longmem(
            _conversations(args),
            args.budgets,
            store=args.store,
            progress=progress,
            details=args.details or bool(args.out),
            **kwargs,
        )  # a results file keeps them
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result["split"] = args.split
    if args.out:
        write_results(args.out, args.split, result, source)
        if not args.details:
            result["rows"] = [{k: v for k, v in row.items() if k != "details"} for row in result["rows"]]
    print(json.dumps(result) if args.json else format_markdown(result) if args.markdown else format_table(result))
    return 0


def write_results(path: str | Path, split: str, result: dict, source: dict) -> dict:
    """Add (or replace) `split`'s result in the results file at `path`, each part with its provenance."""
    path = Path(path)
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    doc.setdefault("parts", {})[split] = {"provenance": source, **{k: v for k, v in result.items() if k != "split"}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return doc


def add_longmem(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "longmem",
        help="long multi-session conversations: recall vs raw-turn baselines per budget",
        description="Answer-in-request recall and tokens per question for the whole transcript, "
        "last turns, BM25/embeddings/hybrid over raw turns and the project stages, "
        "at the same total token budgets. Tune on --split tune, report --split report.",
    )
    p.add_argument(
        "--split",
        choices=("tune", "report", "all"),
        default="report",
        help="tune: conversations 0-2 (choose parameters here); report: 3-5 (held out); default report. "
        f"With --data: tune = {', '.join(TUNE_IDS)}, report = every other sample",
    )
    p.add_argument(
        "--data",
        default=None,
        metavar="PATH",
        help="real conversations in the LoCoMo format (e.g. LoCoMo's data/locomo10.json) instead of "
        "the generated corpus; scored by answer content words and evidence turns",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="also write this split's result with its provenance into a results JSON file",
    )
    p.add_argument(
        "--budgets",
        type=_budget_list,
        default=(1000, 2000, 4000),
        metavar="B1,B2,...",
        help="total request tokens per question (default 1000,2000,4000)",
    )
    p.add_argument(
        "--methods",
        default=None,
        metavar="M1,M2,...",
        help="subset of full,last_turns,bm25,embeddings,hybrid,bounded,vector (default all)",
    )
    p.add_argument(
        "--store",
        choices=("memory", "local"),
        default="memory",
        help="store for the project stages: fresh in-memory stores (default) or the CLI's own store",
    )
    p.add_argument("--details", action="store_true", help="with --json: every question's outcome per method")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--progress", action="store_true", help="say what runs on stderr")
    p.set_defaults(func=run_longmem_cmd)
