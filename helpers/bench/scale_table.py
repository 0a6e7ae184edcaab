"""Tools: the "Memory at scale" table of docs/benchmarks.md, made from the results files of `bench retrieval` and `bench load --users`.

docs/benchmarks.md never types a figure in: `tests/bench/test_scale_results.py` checks that its table is exactly what
`scale_table()` makes from docs/results/retrieval.json, load.json and coarse.json.
"""

from __future__ import annotations

from helpers.bench.results import load_results

__all__ = ["scale_table"]


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 100 else f"{ms:.0f} ms"


def _p95(summary: dict | None) -> str:
    return f"{summary['p95']:.0f} ms p95" if summary else "-"


def _run(source: dict) -> str:
    start, end = source["machine"]["load_average"], source["machine_at_end"]["load_average"]
    return (
        f"`{source['command']}` at {str(source['commit'])[:7]} ({source['date'][:10]}, {source['mode']}, "
        f"{source['machine']['cpus']} CPUs; load average over 1 min {start[0]} at the start, {end[0]} at the end)"
    )


def _ranking(size: dict) -> str:
    coarse = size.get("coarse") or {}
    if not coarse.get("used"):
        return "exact"
    return (
        f"as measured: coarse lists (hybrid top {size['k']} as exact for {coarse['hybrid_top_k_identical']:.0%} of "
        f"these clustered memories' questions, embedding top 50 recall {coarse['vector_recall_at_50']:.0%})"
    )


def scale_table(retrieval: dict | None = None, load: dict | None = None, coarse: dict | None = None) -> str:
    """Markdown: per size the cold start, the first search reading every memory, hybrid p50/p95 and RSS; then
    many users within the cap and with none; the coarse lists' agreement on real conversations (`bench coarse`).
    Defaults: the committed results files."""
    retrieval = load_results("retrieval") if retrieval is None else retrieval
    load = load_results("load") if load is None else load
    lines = [
        "| memories of the user | cold start: a new process's first search | the same, reading every memory "
        "| same results | hybrid search p50 / p95 (the question embedded) | the search alone p50 / p95: exact "
        "(the default) · as measured "
        "| RSS of that process | embedding ranking |",
        "|---:|---:|---:|:---:|---:|---:|---:|---|",
    ]
    for size in retrieval["sizes"]:
        every = size.get("first_search_reading_every_memory_ms")
        hybrid, alone, exact = (size["ms"][m] for m in ("hybrid", "hybrid_search_only", "hybrid_search_only_exact"))
        lines.append(
            f"| {size['memories']:,} | {_s(size['cold_start_ms'])} | {_s(every) if every is not None else '-'} "
            f"| {'yes' if size.get('identical_results') else 'NO'} | {hybrid['p50']:.0f} / {hybrid['p95']:.0f} ms "
            f"| {exact['p50']:.0f} / {exact['p95']:.0f} ms · {alone['p50']:.0f} / {alone['p95']:.0f} ms "
            f"| {size['rss_mb']} MB | {_ranking(size)} |"
        )
    lines += ["", f"Measured by {_run(retrieval['provenance'])}.", ""]
    coarse = load_results("coarse") if coarse is None else coarse
    parts = "; ".join(
        f"{p['part']} part, {p['memories']:,} turns as one user's memories in {p['lists']} lists, {p['questions']:,} "
        f"questions: hybrid top {p['k']} as exact for {p['hybrid_top_k_identical']:.0%}, embedding top {p['k']} "
        f"recall {p['vector_recall_at_k']:.0%}, top 50 recall {p['vector_recall_at_50']:.0%}"
        for p in coarse["parts"]
    )
    lines += [
        f"The coarse lists on real conversations (LoCoMo, read from a path): {parts}. Measured by "
        f"{_run(coarse['provenance'])}.",
        "",
    ]
    users = load["users"]
    lines += [
        f"| {users['users']:,} users × {users['memories_per_user']:,} memories, {users['requests']:,} searches "
        "| p50 / p95 | a user held | a user opened from their file | RSS now / peak | users held at the end |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, label in (("capped", f"within INDEX_CACHE_MB={users['capped']['cache_mb']}"), ("no_cap", "no cap")):
        run = users[name]
        held, opened = (_p95(run["ms_held_user"]), _p95(run["ms_user_opened"]))
        lines.append(
            f"| {label} | {run['ms']['p50']:.0f} / {run['ms']['p95']:.0f} ms | {held} | {opened} "
            f"| {run['rss_mb']} / {run['rss_peak_mb']} MB | {run['users_held_at_end']:,} |"
        )
    lines += ["", f"Measured by {_run(load['provenance'])}."]
    return "\n".join(lines)
