"""The cost story side by side: every strategy, with and without prompt caching, at 50, 200 and 1,000 turns. Tools for 03_context_window_overflow, "Caching cuts the price, not the window".

One run of the scripted trip chat per strategy (and per model where caching makes the model matter), on the
offline model with replies padded to REPLY_TOKENS and a simulated clock moving SECONDS_PER_TURN per turn.
Each strategy's ledger gives, per checkpoint, the four billed token kinds (uncached input, cache writes,
cache reads, output) and USD, with chat calls and memory-maintenance calls (summary, retention, extraction)
apart. A longer script starts with the shorter one and every run is deterministic, so the figures at 50 and
200 turns are the first turns of the 1,000-turn run.
"""

from __future__ import annotations

import concurrent.futures
import datetime as _dt
import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from helpers.config import Settings, load_settings
from helpers.pricing import CHAT_KIND, PRICING_SOURCE, CostLedger, cost_of
from helpers.retrieval.embeddings import get_embedder
from helpers.sim.scripts import TRIP_PERSONA, trip_script
from helpers.sim.simulate import REPLY_TOKENS, SECONDS_PER_TURN, simulate, simulation_client
from helpers.sim.strategies import make_strategy

__all__ = [
    "CHECKPOINTS",
    "MODELS",
    "WINDOW_BUDGET",
    "KEEP_LAST",
    "MEMORY_BUDGET",
    "ROWS",
    "KINDS",
    "cost_table",
    "entry_cost",
    "crossover_turn",
    "provenance",
    "markdown_table",
    "load_results",
    "print_checkpoint",
    "RESULTS_FILE",
]

CHECKPOINTS = (50, 200, 1000)
# Two price tables: claude-haiku-4-5 caches no prefix under 4,096 tokens, claude-sonnet-4-6 from 1,024 (the
# documented minimum cacheable lengths): a bounded request can be too short to cache on one and not the other.
# (claude-sonnet-4-5, at the same price and minimum, retired on 30 November 2026: the API answers it with a 404.)
MODELS = ("claude-haiku-4-5", "claude-sonnet-4-6")
WINDOW_BUDGET = 2000  # tokens: bounded windows (plain: trimmed to it each turn; cache-aware: grows to it, cut to half)
KEEP_LAST = 20  # messages the last-k workaround sends: about the same tokens as WINDOW_BUDGET
MEMORY_BUDGET = 500  # tokens of recalled memories per request (vector rows; the window has WINDOW_BUDGET)
KINDS = ("input", "cache_write", "cache_read", "output")  # the four billed token counts of `usage`
RESULTS_FILE = Path(__file__).resolve().parents[2] / "docs" / "results" / "cost.json"

# (label, registry name, options, caches): a strategy that sends cache_control runs once per model, since the
# model's minimum cacheable length decides what is cached; the others run once and are priced per model.
ROWS: tuple[tuple[str, str, dict, bool], ...] = (
    ("naive", "naive", {}, False),
    ("naive + caching", "naive_cached", {}, True),
    ("last-k", "last_k", {"keep_last": KEEP_LAST}, False),
    ("bounded (plain)", "bounded", {"budget": WINDOW_BUDGET}, False),
    ("bounded (cache-aware)", "bounded_cached", {"budget": WINDOW_BUDGET}, True),
    ("vector", "vector", {"budget": WINDOW_BUDGET, "memory_budget": MEMORY_BUDGET}, False),
    ("vector (cache-aware)", "vector_cached", {"budget": WINDOW_BUDGET, "memory_budget": MEMORY_BUDGET}, True),
)


class _Marked:
    """A strategy wrapper that notes how many ledger entries exist after each turn (to cut the run at checkpoints)."""

    def __init__(self, strategy: Any):
        self._strategy, self.marks = strategy, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._strategy, name)

    def turn(self, text: str):
        result = self._strategy.turn(text)
        self.marks.append(len(self._strategy.ledger.entries))
        return result


class _SameBatches:
    """An embedder that computes each batch of texts once per process: the vector rows index the same turns
    (the same script, often the same replies), so a batch seen in an earlier run is not embedded again. Only an
    identical batch is reused, so every vector is the one the wrapped embedder computed for that very call."""

    def __init__(self, embedder: Any):
        self.embedder, self.name, self.dim, self._seen = embedder, embedder.name, embedder.dim, {}

    def __getattr__(self, name: str) -> Any:  # e.g. Voyage's embed_query: passed through, not memoised
        return getattr(self.embedder, name)

    def embed(self, texts: list[str]) -> Any:
        key = tuple(texts)
        if key not in self._seen:
            self._seen[key] = self.embedder.embed(list(texts))
        return self._seen[key].copy()

    def embed_one(self, text: str) -> Any:
        return self.embed([text])[0]


_EMBEDDERS: dict = {}


def _embedder(settings: Settings) -> _SameBatches:
    """One batch-memoising embedder per process and underlying embedder (shared by the vector runs)."""
    inner = get_embedder(settings)
    return _EMBEDDERS.setdefault(id(inner), _SameBatches(inner))


def _empty() -> dict:
    return {"calls": 0, **{k: 0 for k in KINDS}, "usd": 0.0}


def _add(totals: dict, entry, model: str) -> None:
    totals["calls"] += 1
    totals["input"] += entry.input_tokens
    totals["cache_write"] += entry.cache_creation_input_tokens
    totals["cache_read"] += entry.cache_read_input_tokens
    totals["output"] += entry.output_tokens
    totals["usd"] += entry_cost(entry, model)


def _row(entries: list, model: str, requests: list[int]) -> dict:
    """Chat, maintenance (every other purpose) and total, priced at `model`; the largest request."""
    chat, upkeep, by_purpose = _empty(), _empty(), {}
    for e in entries:
        _add(chat if e.kind == CHAT_KIND else upkeep, e, model)
        if e.kind != CHAT_KIND:
            _add(by_purpose.setdefault(e.purpose, _empty()), e, model)
    total = {k: chat[k] + upkeep[k] for k in chat}
    return {
        "chat": chat,
        "maintenance": upkeep,
        "maintenance_by_purpose": by_purpose,
        "total": total,
        "max_request_tokens": max(requests, default=0),
    }


def _run(
    name: str, options: dict, settings: Settings, turns: int, model: str, progress: bool
) -> tuple[list, list, list[int]]:
    """One strategy over `turns` scripted turns: (ledger entries, entry count after each turn, request sizes)."""
    run_settings = settings.with_(chat_model=model, summary_model=model, extraction_model=model)
    client = simulation_client(run_settings)
    if name.startswith("vector"):  # the vector rows share one embedder that embeds each batch of texts once
        options = {**options, "embedder": _embedder(run_settings)}
    strategy = _Marked(make_strategy(name, client, run_settings, system=TRIP_PERSONA, ledger=CostLedger(), **options))
    result = simulate(strategy, trip_script(turns), name=name, progress=progress)
    if hasattr(strategy, "close"):
        strategy.close()
    return list(strategy.ledger.entries), strategy.marks, result.request_tokens


def _run_tasks(tasks: list[tuple]) -> list[tuple[list, list, list[int]]]:
    """Several runs one after the other in one process (the vector rows: they share the embedder's batches)."""
    return [_run(*task) for task in tasks]


def crossover_turn(ours: list[float], theirs: list[float]) -> int | None:
    """The first turn from which `ours` (cumulative USD) stays below `theirs` to the end; None if it never does."""
    turn = None
    for t, (a, b) in enumerate(zip(ours, theirs), start=1):
        if a < b:
            turn = turn or t
        else:
            turn = None
    return turn


def _cumulative(entries: list, marks: list[int], model: str) -> list[float]:
    out, total, seen = [], 0.0, 0
    for mark in marks:
        total += sum(entry_cost(e, model) for e in entries[seen:mark])
        seen = mark
        out.append(total)
    return out


def entry_cost(entry, model: str) -> float:
    """USD of one ledger entry at `model`'s price: its 1-hour cache writes at 2x input, the rest at 1.25x."""
    return cost_of(entry.usage, model)


def cost_table(
    checkpoints: Iterable[int] = CHECKPOINTS,
    *,
    models: Iterable[str] = MODELS,
    rows: Iterable[tuple[str, str, dict, bool]] = ROWS,
    settings: Settings | None = None,
    progress: bool = False,
    jobs: int = 1,
) -> dict:
    """Every row of `rows` at every checkpoint, priced at every model: the four token kinds and USD, chat and
    maintenance apart; at the middle checkpoint, cache-aware bounded against naive + caching, and the crossover.
    `jobs` > 1 runs the simulations in that many processes (same figures: every run is deterministic)."""
    settings = settings or load_settings()
    checkpoints, models = sorted(set(checkpoints)), list(models)
    turns = checkpoints[-1]
    out: dict = {"checkpoints": checkpoints, "models": models, "strategies": {}, "cumulative_usd": {}}
    rows = list(rows)
    # a strategy without breakpoints runs once (the model changes only its prices); one with them, per model
    tasks = {
        (name, model if caches else models[0]): (
            name,
            options,
            settings,
            turns,
            model if caches else models[0],
            progress and jobs == 1,
        )
        for _label, name, options, caches in rows
        for model in models
    }
    # the vector runs stay together in one process, so each batch of texts is embedded once; they take longest,
    # so with jobs > 1 they start first and the other runs share the remaining processes
    vector = [key for key in tasks if key[0].startswith("vector")]
    groups = ([vector] if vector else []) + [[key] for key in tasks if key not in vector]
    if jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            done = list(pool.map(_run_tasks, [[tasks[key] for key in group] for group in groups]))
    else:
        done = [_run_tasks([tasks[key] for key in group]) for group in groups]
    runs = {key: run for group, results in zip(groups, done) for key, run in zip(group, results)}
    for label, name, options, caches in rows:
        out["strategies"][label] = {"registry": name, "options": options, "prompt_caching": caches, "by_model": {}}
        for model in models:
            entries, marks, requests = runs[(name, model if caches else models[0])]
            out["strategies"][label]["by_model"][model] = {
                str(t): _row(entries[: marks[t - 1]], model, requests[:t]) for t in checkpoints if t <= len(marks)
            }
            out["cumulative_usd"].setdefault(label, {})[model] = _cumulative(entries, marks, model)
    out["comparison"] = _compare(out, checkpoints)
    return out


def _compare(out: dict, checkpoints: list[int]) -> dict:
    """Cache-aware bounded against naive + caching: USD at the middle checkpoint, and the crossover turn."""
    middle = checkpoints[len(checkpoints) // 2] if len(checkpoints) > 1 else checkpoints[0]
    found: dict = {"at_turns": middle}
    strategies = out["strategies"]
    if "bounded (cache-aware)" not in strategies or "naive + caching" not in strategies:
        return found
    for model in out["models"]:
        ours = strategies["bounded (cache-aware)"]["by_model"][model][str(middle)]["total"]["usd"]
        theirs = strategies["naive + caching"]["by_model"][model][str(middle)]["total"]["usd"]
        cumulative = out["cumulative_usd"]
        found[model] = {
            "bounded_cache_aware_usd": ours,
            "naive_caching_usd": theirs,
            "cache_aware_bounded_wins": ours < theirs,
            "saving_usd": theirs - ours,
            "ratio": theirs / ours if ours else None,
            "crossover_turn": crossover_turn(
                cumulative["bounded (cache-aware)"][model], cumulative["naive + caching"][model]
            ),
        }
    return found


def provenance(argv: list[str] | None = None) -> dict:
    """Where the figures come from: command, commit, data, date, mode and the assumptions they rest on."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {
        "command": "python -m helpers.bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "commit": git("rev-parse", "HEAD") or None,
        "uncommitted_changes": bool(git("status", "--porcelain")),
        "data": "the scripted trip chat (helpers.sim.scripts.trip_script), persona TRIP_PERSONA",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": "offline (token counts by the local BPE, an offline count; prices from the model's price table)",
        "reply_tokens": REPLY_TOKENS,
        "seconds_per_turn": SECONDS_PER_TURN,
        "window_budget": WINDOW_BUDGET,
        "keep_last": KEEP_LAST,
        "memory_budget": MEMORY_BUDGET,
        "pricing": PRICING_SOURCE,
    }


def markdown_table(report: dict) -> str:
    """The report as Markdown: provenance, then per model one row per strategy and checkpoint, then the verdict."""
    prov = report.get("provenance", {})
    lines = [
        f"# Cost of memory, side by side ({prov.get('date', '?')})",
        "",
        f"Written by `{prov.get('command', '?')}` at commit `{prov.get('commit', '?')}`"
        f"{' (with uncommitted changes)' if prov.get('uncommitted_changes') else ''}. Data: {prov.get('data', '?')}. "
        f"Mode: {prov.get('mode', '?')}. Replies padded to {prov.get('reply_tokens')} tokens; "
        f"{prov.get('seconds_per_turn')} s between turns; bounded window budget {prov.get('window_budget')} tokens; "
        f"last-k keeps {prov.get('keep_last')} messages; vector memories up to {prov.get('memory_budget')} "
        f"tokens. Prices: {prov.get('pricing', '?')}.",
        "",
    ]
    for model in report["models"]:
        lines += [
            f"## {model}",
            "",
            "| strategy | turns | input | cache write | cache read | output | USD | of which upkeep |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, row in report["strategies"].items():
            for turns in report["checkpoints"]:
                cell = row["by_model"][model].get(str(turns))
                if cell is None:
                    continue
                t = cell["total"]
                lines.append(
                    f"| {label} | {turns:,} | {t['input']:,} | {t['cache_write']:,} | {t['cache_read']:,} | "
                    f"{t['output']:,} | {t['usd']:.4f} | {cell['maintenance']['usd']:.4f} |"
                )
        found = report.get("comparison", {}).get(model)
        if found:
            verdict = "beats" if found["cache_aware_bounded_wins"] else "does not beat"
            lines += [
                "",
                f"At {report['comparison']['at_turns']:,} turns cache-aware bounded ({found['bounded_cache_aware_usd']:.4f} USD) "
                f"{verdict} naive + caching ({found['naive_caching_usd']:.4f} USD); crossover turn: "
                f"{found['crossover_turn'] if found['crossover_turn'] is not None else 'none within the run'}.",
            ]
        lines.append("")
    return "\n".join(lines)


def load_results(path: str | Path | None = None) -> dict:
    """The results file `python -m helpers.bench cost --out docs/results/cost.json` wrote (notebooks read it)."""
    path = Path(path) if path else RESULTS_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `python -m helpers.bench cost --json --out {path}` "
            "(it simulates every strategy offline, about a quarter of an hour)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def print_checkpoint(report: dict, turns: int, labels: Iterable[str] | None = None) -> None:
    """One checkpoint of the report as a table per model, then the verdict cache-aware bounded vs naive + caching."""
    for model in report["models"]:
        print(f"{model}, {turns:,} turns (replies {report['provenance']['reply_tokens']} tokens)")
        print(f"  {'strategy':<22}" + "".join(f"{k:>12}" for k in KINDS) + f"{'USD':>9}{'upkeep':>9}")
        for label, row in report["strategies"].items():
            if labels is not None and label not in labels:
                continue
            cell = row["by_model"][model][str(turns)]
            print(
                f"  {label:<22}"
                + "".join(f"{cell['total'][k]:>12,}" for k in KINDS)
                + f"{cell['total']['usd']:>9.3f}{cell['maintenance']['usd']:>9.3f}"
            )
        found = report["comparison"].get(model)
        if found and labels is None:
            crossover = found["crossover_turn"]
            print(
                f"  cache-aware bounded {'beats' if found['cache_aware_bounded_wins'] else 'does not beat'} naive + "
                f"caching at {report['comparison']['at_turns']:,} turns (${found['bounded_cache_aware_usd']:.3f} vs "
                f"${found['naive_caching_usd']:.3f}); cheaper for good from turn "
                f"{crossover if crossover is not None else '- (never in the run)'}"
            )
