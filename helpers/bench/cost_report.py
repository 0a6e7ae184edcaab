"""Tools: the `cost` benchmark's provenance and its Markdown table (docs/results/cost.md), with every field of cost.json named."""

from __future__ import annotations

import datetime as _dt
import subprocess
import sys
from pathlib import Path

from helpers.bench.cost_table import KEEP_LAST, MEMORY_BUDGET, OURS, THEIRS, WINDOW_BUDGET
from helpers.pricing import PRICING_SOURCE
from helpers.sim.simulate import REPLY_TOKENS, SECONDS_PER_TURN

__all__ = ["provenance", "markdown_table", "FIELDS"]

# What the results file carries, as cost.md's header states it (notebooks print from these fields).
FIELDS = (
    "`strategies[label].by_model[model][turns]`: `chat`, `maintenance` (summary, retention, extraction calls) and "
    "`total`, each with `calls`, the four billed token counts `input` (uncached), `cache_write`, `cache_read`, "
    "`output` and `usd`; `max_request_tokens`; `recall`: the share of the `recall_questions` planted questions "
    "whose answer the request built right after that turn carries. `strategies[label].layout[model]` (cache-aware "
    "rows): the layout the run ended with: `low`/`high` (the window folds past `high` down to at most `low` "
    "tokens), `breakpoints`, `ttl`, `minimum` (the model's minimum cacheable prefix) and the cost model's "
    "`usd_per_turn` against `plain_usd_per_turn` (the budget's marks, uncached). `cumulative_usd[label][model]`: "
    "USD after each turn. `comparison[model]`: cache-aware bounded against naive + caching at `comparison.at_turns` "
    "(`bounded_cache_aware_usd`, `naive_caching_usd`, `ratio`), `times_cheaper_at[turns]` (naive + caching USD / "
    "cache-aware bounded USD), `recall_at[turns]` and `crossover_turn` (the first turn from which cache-aware "
    "bounded stays cheaper to the end of the run; null: never), `floor_at[turns]` (helpers/bench/cost_floor.py: "
    "naive + caching's bill with every cache read cut to the model's `minimum`, no fold, no upkeep: `floor_usd` and "
    "`max_times_cheaper`, the most times cheaper any cache-aware bounded memory of this chat can be). `pace_and_ttl.by_model[model]`: one entry per "
    "`seconds_per_turn` and `ttl`, over `pace_and_ttl.turns` turns: `naive_caching_usd`, "
    "`bounded_cache_aware_usd`, `naive_usd` (no caching), `caching_pays_for_naive`, `times_cheaper`, "
    "`crossover_turn`, the cache reads and writes of both and the bounded run's `layout`."
)


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
        "data": "the scripted trip chat with three details planted (helpers.sim.scripts.recall_script), persona "
        "TRIP_PERSONA; recall: helpers.sim.scripts.recall_questions",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "mode": "offline (token counts by the local BPE, an offline count; prices from the model's price table)",
        "reply_tokens": REPLY_TOKENS,
        "seconds_per_turn": SECONDS_PER_TURN,
        "window_budget": WINDOW_BUDGET,
        "keep_last": KEEP_LAST,
        "memory_budget": MEMORY_BUDGET,
        "pricing": PRICING_SOURCE,
    }


def _run_line(run: dict | None) -> str:
    if not run:
        return ""
    return (
        f" The run took {run['wall_seconds']:,} s wall and {run['cpu_seconds']:,} s CPU in {run['jobs']} process(es), "
        f"load average {run['load_average_at_start'][0]} at its start and {run['load_average_at_end'][0]} at its end."
    )


def _upkeep(prov: dict) -> str:
    """The maintenance model as the header states it (an older file, or None: each row's chat model)."""
    model = prov.get("maintenance_model")
    return f"{model}, whichever model chats, priced as {model}" if model else "each row's chat model"


def _floor_lines(found: dict, source: dict | None = None) -> list[str]:
    """The floor per checkpoint (helpers/bench/cost_floor.py), its arithmetic spelled out from the file's fields,
    and the assumptions it holds under (a bound of this chat as simulated, not of every chat)."""
    source = source or {}
    lines = [
        f"Floor at {int(t):,} turns: naive + caching ${f['naive_caching_usd']:.4f} less its reads above the "
        f"minimum (({f['cache_read']:,} - {f['reading_turns']} turns x {f['minimum']:,}) tokens x "
        f"${f['cache_read_usd_per_mtok']:g}/MTok) = ${f['floor_usd']:.4f}: at most {f['max_times_cheaper']:.2f}x "
        "cheaper."
        for t, f in found.get("floor_at", {}).items()
    ]
    if lines:
        lines.append(
            f"The floor holds under this run's assumptions only: replies of {source.get('reply_tokens', '?')} tokens "
            f"kept verbatim in the history, {source.get('seconds_per_turn', '?')} s between turns, 5-minute cache "
            "entries, and the turns before the history reaches the model's minimum cacheable prefix paid uncached. "
            "Longer replies, or a stable prefix padded to the minimum so that turn 2 already reads from the cache, "
            "give another bound."
        )
    return [*lines, ""] if lines else []


def _pct(value) -> str:
    return f"{value:.0%}" if value is not None else "-"


def _layout_line(report: dict, model: str) -> list[str]:
    layouts = {
        label: row["layout"][model] for label, row in report["strategies"].items() if model in row.get("layout", {})
    }
    lines = []
    for label, lay in layouts.items():
        how = f"breakpoints with a {lay['ttl']} TTL" if lay["breakpoints"] else "no breakpoints"
        lines.append(
            f"- {label}: the window folds past {lay['high']:,} tokens down to at most {lay['low']:,}; {how}; "
            f"minimum cacheable prefix {lay['minimum']:,} tokens; cost model {lay['usd_per_turn'] * 1e6:,.0f} "
            f"µUSD of input and upkeep per turn against {lay['plain_usd_per_turn'] * 1e6:,.0f} for the "
            f"budget's marks uncached."
        )
    return lines


def _pace_lines(report: dict, model: str) -> list[str]:
    sweep = report.get("pace_and_ttl")
    if not sweep or model not in sweep["by_model"]:
        return []
    lines = [
        f"Pace and TTL ({sweep['turns']:,} turns; {sweep['compares']}):",
        "",
        "| s between turns | TTL | naive | naive + caching | cache-aware bounded | times cheaper | crossover turn | "
        "bounded cache reads | bounded layout (low-high, breakpoints) |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for case in sweep["by_model"][model]:
        lay = case.get("layout") or {}
        shape = f"{lay.get('low', 0):,}-{lay.get('high', 0):,}, {'yes' if lay.get('breakpoints') else 'no'}"
        crossover = case["crossover_turn"] if case["crossover_turn"] is not None else "none"
        lines.append(
            f"| {case['seconds_per_turn']:g} | {case['ttl']} | {case['naive_usd']:.4f} | "
            f"{case['naive_caching_usd']:.4f} | {case['bounded_cache_aware_usd']:.4f} | {case['times_cheaper']:.2f} | "
            f"{crossover} | {case['bounded_cache_aware_cache_read_tokens']:,} | {shape} |"
        )
    return [*lines, ""]


def markdown_table(report: dict) -> str:
    """The report as Markdown: provenance and the fields, then per model one row per strategy and checkpoint,
    the layouts, the verdict at every checkpoint and the pace and TTL sweep."""
    prov = report.get("provenance", {})
    lines = [
        f"# Cost of memory, side by side ({prov.get('date', '?')})",
        "",
        f"Written by `{prov.get('command', '?')}` at commit `{prov.get('commit', '?')}`"
        f"{' (with uncommitted changes)' if prov.get('uncommitted_changes') else ''}. Data: {prov.get('data', '?')}. "
        f"Mode: {prov.get('mode', '?')}. Replies padded to {prov.get('reply_tokens')} tokens; "
        f"{prov.get('seconds_per_turn')} s between turns; bounded window budget {prov.get('window_budget')} tokens; "
        f"last-k keeps {prov.get('keep_last')} messages; vector memories up to {prov.get('memory_budget')} "
        f"tokens. Maintenance calls (summary, extraction) on {_upkeep(prov)}. Prices: {prov.get('pricing', '?')}."
        + _run_line(prov.get("run")),
        "",
        f"Fields of cost.json: {FIELDS}",
        "",
    ]
    for model in report["models"]:
        lines += [
            f"## {model}",
            "",
            "| strategy | turns | input | cache write | cache read | output | USD | of which upkeep | recall |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for label, row in report["strategies"].items():
            for turns in report["checkpoints"]:
                cell = row["by_model"][model].get(str(turns))
                if cell is None:
                    continue
                t = cell["total"]
                lines.append(
                    f"| {label} | {turns:,} | {t['input']:,} | {t['cache_write']:,} | {t['cache_read']:,} | "
                    f"{t['output']:,} | {t['usd']:.4f} | {cell['maintenance']['usd']:.4f} | {_pct(cell.get('recall'))} |"
                )
        lines += ["", *_layout_line(report, model), ""]
        found = report.get("comparison", {}).get(model)
        if found:
            crossover = found["crossover_turn"] if found["crossover_turn"] is not None else "none within the run"
            times = "; ".join(
                f"{int(t):,} turns {x:.2f}x (recall {_pct(found['recall_at'][t][OURS])} vs "
                f"{_pct(found['recall_at'][t][THEIRS])})"
                for t, x in found.get("times_cheaper_at", {}).items()
            )
            lines += [
                f"{OURS} against {THEIRS}: {times}; crossover turn: {crossover}.",
                "",
                *_floor_lines(found, report.get("provenance")),
            ]
        lines += _pace_lines(report, model)
    return "\n".join(lines)
