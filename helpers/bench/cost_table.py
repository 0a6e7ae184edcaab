"""The cost story side by side: every strategy, with and without prompt caching, at 50, 200 and 1,000 turns. Tools for further/02_prompt_caching, "Every strategy, priced at two models".

One run of the scripted trip chat with three details planted (helpers.sim.scripts.recall_script) per strategy
(and per model where caching makes the model matter), on the offline model with replies padded to REPLY_TOKENS
and a simulated clock moving SECONDS_PER_TURN per turn. Each strategy's ledger gives, per checkpoint, the four
billed token kinds (uncached input, cache writes, cache reads, output) and USD, with chat calls and
memory-maintenance calls (summary, retention, extraction) apart, and the recall: the share of the planted
questions whose answer the request built right after that turn carries. A longer script starts with the shorter
one and every run is deterministic, so the figures at 50 and 200 turns are the first turns of the 1,000-turn run.
Memory maintenance (summary merges, fact extraction) runs on MAINTENANCE_MODEL, the cheapest model of the family,
whatever model answers the user (the settings' SUMMARY_MODEL and EXTRACTION_MODEL default, what a production app
would pick); each maintenance call is priced at the model that made it, each chat call at the row's model.
The pace and TTL sweep is helpers/bench/cost_pace.py; provenance and the Markdown table, cost_report.py.
"""

from __future__ import annotations

import concurrent.futures
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from helpers.bench.same_batches import same_batches_embedder
from helpers.bench.scoring import answer_in_request
from helpers.config import Settings, load_settings
from helpers.pricing import CHAT_KIND, CostLedger, cost_of
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import SECONDS_PER_TURN, simulate, simulation_client
from helpers.sim.strategies import make_strategy

__all__ = [
    "CHECKPOINTS",
    "MODELS",
    "WINDOW_BUDGET",
    "KEEP_LAST",
    "MEMORY_BUDGET",
    "ROWS",
    "KINDS",
    "CACHE_AWARE",
    "EXTRA_ROWS",
    "PADDED",
    "MAINTENANCE_MODEL",
    "OURS",
    "THEIRS",
    "cost_table",
    "table_tasks",
    "run_strategy",
    "run_tasks",
    "recall_share",
    "entry_cost",
    "crossover_turn",
    "cumulative_usd",
    "load_results",
    "print_checkpoint",
    "RESULTS_FILE",
]

CHECKPOINTS = (50, 200, 1000)
# Two price tables: claude-haiku-4-5 caches no prefix under 4,096 tokens, claude-sonnet-4-6 from 1,024 (the
# documented minimum cacheable lengths): a bounded request can be too short to cache on one and not the other.
# (claude-sonnet-4-5, at the same price and minimum, retired on 30 November 2026: the API answers it with a 404.)
MODELS = ("claude-haiku-4-5", "claude-sonnet-4-6")
WINDOW_BUDGET = 2000  # tokens: bounded windows (plain: trimmed to it each turn; cache-aware: the layout's marks)
KEEP_LAST = 20  # messages the last-k workaround sends: about the same tokens as WINDOW_BUDGET
MEMORY_BUDGET = 500  # tokens of recalled memories per request (vector rows; the window has WINDOW_BUDGET)
KINDS = ("input", "cache_write", "cache_read", "output")  # the four billed token counts of `usage`
RESULTS_FILE = Path(__file__).resolve().parents[2] / "docs" / "results" / "cost.json"
CACHE_AWARE = ("bounded_cached", "bounded_padded", "vector_cached")  # their layout is told the simulation's pace
OURS, THEIRS = "bounded (cache-aware)", "naive + caching"  # the comparison the results file reports
PADDED = "bounded (cache-aware, padded)"  # OURS with its stable prefix padded to the model's minimum
# The model of every maintenance call (summary merge, extraction), whichever model chats: the family's cheapest,
# as the settings' defaults (helpers.config: SUMMARY_MODEL, EXTRACTION_MODEL). None: the chat model itself.
MAINTENANCE_MODEL: str | None = "claude-haiku-4-5"

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
# Rows run only when `cost --only` names them (the committed results file's table is ROWS): cache-aware bounded
# memory whose persona is padded with explicit neutral filler to the model's minimum cacheable length, its own
# breakpoint before the summary (helpers.memory.caching, 'Padded to the minimum').
EXTRA_ROWS: tuple[tuple[str, str, dict, bool], ...] = ((PADDED, "bounded_padded", {"budget": WINDOW_BUDGET}, True),)


def recall_share(strategy: Any) -> float:
    """The share of the planted questions (helpers.sim.scripts.recall_questions) whose answer is in the request
    `strategy` would send for them now (built, never sent)."""
    questions = recall_questions()
    return sum(answer_in_request(strategy.build_request(q), a) for _kind, q, a in questions) / len(questions)


class _Marked:
    """A strategy wrapper that notes how many ledger entries exist after each turn (to cut the run at checkpoints)
    and, at the turns in `score_at`, the recall of the request it would send."""

    def __init__(self, strategy: Any, score_at: Iterable[int] = ()):
        self._strategy, self.marks, self.recall, self._score_at = strategy, [], {}, set(score_at)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._strategy, name)

    def turn(self, text: str):
        result = self._strategy.turn(text)
        self.marks.append(len(self._strategy.ledger.entries))
        if len(self.marks) in self._score_at:
            self.recall[len(self.marks)] = recall_share(self._strategy)
        return result


def _empty() -> dict:
    return {"calls": 0, **{k: 0 for k in KINDS}, "usd": 0.0}


def _add(totals: dict, entry, model: str, maintenance: str | None = None) -> None:
    totals["calls"] += 1
    totals["input"] += entry.input_tokens
    totals["cache_write"] += entry.cache_creation_input_tokens
    totals["cache_read"] += entry.cache_read_input_tokens
    totals["output"] += entry.output_tokens
    totals["usd"] += entry_cost(entry, model, maintenance)


def _row(entries: list, model: str, requests: list[int], maintenance: str | None = None) -> dict:
    """Chat, maintenance (every other purpose) and total, chat priced at `model`, maintenance at `maintenance`
    (None: `model`); the largest request."""
    chat, upkeep, by_purpose = _empty(), _empty(), {}
    for e in entries:
        _add(chat if e.kind == CHAT_KIND else upkeep, e, model, maintenance)
        if e.kind != CHAT_KIND:
            _add(by_purpose.setdefault(e.purpose, _empty()), e, model, maintenance)
    total = {k: chat[k] + upkeep[k] for k in chat}
    return {
        "chat": chat,
        "maintenance": upkeep,
        "maintenance_by_purpose": by_purpose,
        "total": total,
        "max_request_tokens": max(requests, default=0),
    }


def run_strategy(
    name: str,
    options: dict,
    settings: Settings,
    turns: int,
    model: str,
    *,
    progress: bool = False,
    seconds_per_turn: float = SECONDS_PER_TURN,
    score_at: Iterable[int] = (),
    maintenance_model: str | None = MAINTENANCE_MODEL,
) -> dict:
    """One strategy over `turns` scripted turns at `seconds_per_turn`, chatting on `model`, its maintenance calls on
    `maintenance_model` (None: `model`): its ledger entries, the entry count after each turn (marks), request sizes,
    the recall at each turn of `score_at` and, cache-aware, the layout it ended with."""
    upkeep = maintenance_model or model
    run_settings = settings.with_(chat_model=model, summary_model=upkeep, extraction_model=upkeep)
    client = simulation_client(run_settings)
    if name.startswith("vector"):  # the vector rows share one embedder that embeds each batch of texts once
        options = {**options, "embedder": same_batches_embedder(run_settings)}
    if name in CACHE_AWARE:
        options = {**options, "pace_seconds": seconds_per_turn}
    strategy = _Marked(
        make_strategy(name, client, run_settings, system=TRIP_PERSONA, ledger=CostLedger(), **options), score_at
    )
    result = simulate(strategy, recall_script(turns), name=name, progress=progress, seconds_per_turn=seconds_per_turn)
    if hasattr(strategy, "close"):
        strategy.close()
    layout = getattr(strategy, "layout", None)
    return {
        "entries": list(strategy.ledger.entries),
        "marks": strategy.marks,
        "requests": result.request_tokens,
        "recall": strategy.recall,
        "layout": layout.to_dict() if layout is not None else None,
        "maintenance_model": maintenance_model,
    }


def _run_group(tasks: list[dict]) -> list[dict]:
    """Several runs one after the other in one process (the vector rows: they share the embedder's batches)."""
    return [run_strategy(**task) for task in tasks]


def run_tasks(tasks: dict[Any, dict], jobs: int = 1) -> dict[Any, dict]:
    """Every task (run_strategy's keyword arguments) by key; `jobs` > 1 in that many processes (same figures)."""
    # the vector runs stay together in one process, so each batch of texts is embedded once; they take longest,
    # so with jobs > 1 they start first and the other runs share the remaining processes
    vector = [key for key, task in tasks.items() if task["name"].startswith("vector")]
    groups = ([vector] if vector else []) + [[key] for key in tasks if key not in vector]
    if jobs > 1:
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs) as pool:
            done = list(pool.map(_run_group, [[tasks[key] for key in group] for group in groups]))
    else:
        done = [_run_group([tasks[key] for key in group]) for group in groups]
    return {key: run for group, results in zip(groups, done) for key, run in zip(group, results)}


def _key(name: str, model: str, seconds_per_turn: float = SECONDS_PER_TURN, ttl: str | None = None) -> tuple:
    return (name, model, float(seconds_per_turn), ttl)


def table_tasks(
    checkpoints: Iterable[int],
    models: Iterable[str],
    rows: Iterable[tuple[str, str, dict, bool]] = ROWS,
    settings: Settings | None = None,
    progress: bool = False,
    maintenance_model: str | None = MAINTENANCE_MODEL,
) -> dict[tuple, dict]:
    """The runs the side-by-side table needs: a strategy without breakpoints once (the model changes only its
    prices), one with them once per model; recall scored at every checkpoint; maintenance on `maintenance_model`."""
    settings, checkpoints, models = settings or load_settings(), sorted(set(checkpoints)), list(models)
    return {
        _key(name, model if caches else models[0]): {
            "name": name,
            "options": options,
            "settings": settings,
            "turns": checkpoints[-1],
            "model": model if caches else models[0],
            "progress": progress,
            "score_at": checkpoints,
            "maintenance_model": maintenance_model,
        }
        for _label, name, options, caches in rows
        for model in models
    }


def crossover_turn(ours: list[float], theirs: list[float]) -> int | None:
    """The first turn from which `ours` (cumulative USD) stays below `theirs` to the end; None if it never does."""
    turn = None
    for t, (a, b) in enumerate(zip(ours, theirs), start=1):
        if a < b:
            turn = turn or t
        else:
            turn = None
    return turn


def cumulative_usd(run: dict, model: str, turns: int | None = None) -> list[float]:
    """A run's cumulative USD after each turn (its first `turns`), chat calls priced at `model`, maintenance calls at
    the run's maintenance model (when it had one of its own; else at `model` too)."""
    out, total, seen, upkeep = [], 0.0, 0, run.get("maintenance_model")
    for mark in run["marks"][:turns]:
        total += sum(entry_cost(e, model, upkeep) for e in run["entries"][seen:mark])
        seen = mark
        out.append(total)
    return out


def entry_cost(entry, model: str, maintenance: str | None = None) -> float:
    """USD of one ledger entry at `model`'s price (a maintenance entry at `maintenance`'s, when given): its 1-hour
    cache writes at 2x input, the rest at 1.25x."""
    return cost_of(entry.usage, maintenance if maintenance and entry.kind != CHAT_KIND else model)


def cost_table(
    checkpoints: Iterable[int] = CHECKPOINTS,
    *,
    models: Iterable[str] = MODELS,
    rows: Iterable[tuple[str, str, dict, bool]] = ROWS,
    settings: Settings | None = None,
    progress: bool = False,
    jobs: int = 1,
    runs: dict[tuple, dict] | None = None,
) -> dict:
    """Every row of `rows` at every checkpoint, priced at every model: the four token kinds and USD, chat and
    maintenance apart, and the recall; cache-aware bounded against naive + caching at every checkpoint, and the
    crossover. `jobs` > 1 runs the simulations in that many processes (same figures: every run is deterministic);
    `runs`: the runs of table_tasks already done (with others, by the `cost` command)."""
    checkpoints, models, rows = sorted(set(checkpoints)), list(models), list(rows)
    if runs is None:
        runs = run_tasks(table_tasks(checkpoints, models, rows, settings, progress and jobs == 1), jobs)
    out: dict = {
        "checkpoints": checkpoints,
        "models": models,
        "recall_questions": len(recall_questions()),
        "strategies": {},
        "cumulative_usd": {},
    }
    for label, name, options, caches in rows:
        out["strategies"][label] = {"registry": name, "options": options, "prompt_caching": caches, "by_model": {}}
        for model in models:
            run = runs[_key(name, model if caches else models[0])]
            marks, by_turns = run["marks"], {}
            for t in checkpoints:
                if t <= len(marks):
                    by_turns[str(t)] = {
                        **_row(
                            run["entries"][: marks[t - 1]], model, run["requests"][:t], run.get("maintenance_model")
                        ),
                        "recall": run["recall"].get(t),
                    }
            out["strategies"][label]["by_model"][model] = by_turns
            if run["layout"] is not None:
                out["strategies"][label].setdefault("layout", {})[model] = run["layout"]
            out["cumulative_usd"].setdefault(label, {})[model] = cumulative_usd(run, model)
    out["comparison"] = _compare(out, checkpoints)
    return out


def _compare(out: dict, checkpoints: list[int]) -> dict:
    """Cache-aware bounded against naive + caching: USD at the middle checkpoint, how many times cheaper at each
    checkpoint, the recall of both, and the crossover turn."""
    middle = checkpoints[len(checkpoints) // 2] if len(checkpoints) > 1 else checkpoints[0]
    found: dict = {"at_turns": middle}
    strategies = out["strategies"]
    if OURS not in strategies or THEIRS not in strategies:
        return found
    for model in out["models"]:
        cells = {label: strategies[label]["by_model"][model] for label in (OURS, THEIRS)}
        ours, theirs = cells[OURS][str(middle)]["total"]["usd"], cells[THEIRS][str(middle)]["total"]["usd"]
        cumulative = out["cumulative_usd"]
        found[model] = {
            "bounded_cache_aware_usd": ours,
            "naive_caching_usd": theirs,
            "cache_aware_bounded_wins": ours < theirs,
            "saving_usd": theirs - ours,
            "ratio": theirs / ours if ours else None,
            "crossover_turn": crossover_turn(cumulative[OURS][model], cumulative[THEIRS][model]),
            "times_cheaper_at": {
                t: cells[THEIRS][t]["total"]["usd"] / cells[OURS][t]["total"]["usd"] for t in cells[OURS]
            },
            "recall_at": {t: {label: cells[label][t]["recall"] for label in (OURS, THEIRS)} for t in cells[OURS]},
        }
        if PADDED in strategies:  # the padded layout against the same naive + caching
            padded = strategies[PADDED]["by_model"][model]
            found[model]["padded"] = {
                "usd": padded[str(middle)]["total"]["usd"],
                "times_cheaper_at": {
                    t: cells[THEIRS][t]["total"]["usd"] / padded[t]["total"]["usd"]
                    for t in padded
                    if t in cells[THEIRS]
                },
                "recall_at": {t: padded[t]["recall"] for t in padded},
            }
    return found


def load_results(path: str | Path | None = None) -> dict:
    """The results file `python -m helpers.bench cost --out docs/results/cost.json` wrote (notebooks read it)."""
    path = Path(path) if path else RESULTS_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `python -m helpers.bench cost --json --jobs 2 --out {path}` "
            "(it simulates every strategy offline, about half an hour of CPU)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def print_checkpoint(report: dict, turns: int, labels: Iterable[str] | None = None) -> None:
    """One checkpoint of the report as a table per model (tokens, USD, upkeep, recall), then the verdict
    cache-aware bounded vs naive + caching."""
    for model in report["models"]:
        print(f"{model}, {turns:,} turns (replies {report['provenance']['reply_tokens']} tokens)")
        print(f"  {'strategy':<22}" + "".join(f"{k:>12}" for k in KINDS) + f"{'USD':>9}{'upkeep':>9}{'recall':>8}")
        for label, row in report["strategies"].items():
            if labels is not None and label not in labels:
                continue
            cell = row["by_model"][model][str(turns)]
            recall = f"{cell['recall']:.0%}" if cell.get("recall") is not None else "-"
            print(
                f"  {label:<22}"
                + "".join(f"{cell['total'][k]:>12,}" for k in KINDS)
                + f"{cell['total']['usd']:>9.3f}{cell['maintenance']['usd']:>9.3f}{recall:>8}"
            )
        found = report["comparison"].get(model)
        if found and labels is None:
            crossover = found["crossover_turn"]
            ratio = (found.get("times_cheaper_at") or {}).get(str(turns))
            print(
                f"  cache-aware bounded {'beats' if found['cache_aware_bounded_wins'] else 'does not beat'} naive + "
                f"caching at {report['comparison']['at_turns']:,} turns (${found['bounded_cache_aware_usd']:.3f} vs "
                f"${found['naive_caching_usd']:.3f}); cheaper for good from turn "
                f"{crossover if crossover is not None else '- (never in the run)'}"
                + (f"; at {turns:,} turns {ratio:.2f}x cheaper" if ratio is not None else "")
            )
