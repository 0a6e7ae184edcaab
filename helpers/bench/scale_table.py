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
        return "-"
    alone, approx = size["ms"]["hybrid_search_only"], size["ms"]["hybrid_approximate"]
    return (
        f"cold start {_s(size['cold_start_approximate_ms'])}, hybrid {approx['p50']:.0f} / {approx['p95']:.0f} ms, "
        f"alone {alone['p50']:.0f} / {alone['p95']:.0f} ms; top {size['k']} as exact for "
        f"{coarse['hybrid_top_k_identical']:.0%} of these clustered memories' questions, embedding top 50 recall "
        f"{coarse['vector_recall_at_50']:.0%}"
    )


def scale_table(retrieval: dict | None = None, load: dict | None = None, coarse: dict | None = None) -> str:
    """Markdown: per size the cold start (with and without loading the embedding model), the first search reading
    every memory, hybrid p50/p95 and RSS on the default exact path, and the coarse lists' figures; then
    many users within the cap and with none; the coarse lists' agreement on real conversations (`bench coarse`).
    Defaults: the committed results files."""
    retrieval = load_results("retrieval") if retrieval is None else retrieval
    load = load_results("load") if load is None else load
    lines = [
        "| memories of the user | cold start: a new process's first search (model loaded before) | the same, "
        "loading the embedding model too | the same, reading every memory | same results | hybrid search p50 / p95 "
        "(the question embedded) | the search alone p50 / p95 (the question's vector given) | RSS of that process "
        "| with the opt-in coarse lists (`--approximate`) |",
        "|---:|---:|---:|---:|:---:|---:|---:|---:|---|",
    ]
    for size in retrieval["sizes"]:
        every = size.get("first_search_reading_every_memory_ms")
        hybrid, exact = (size["ms"][m] for m in ("hybrid", "hybrid_search_only_exact"))
        lines.append(
            f"| {size['memories']:,} | {_s(size['cold_start_ms'])} | {_s(size['cold_start_with_model_load_ms'])} "
            f"| {_s(every) if every is not None else '-'} "
            f"| {'yes' if size.get('identical_results') else 'NO'} | {hybrid['p50']:.0f} / {hybrid['p95']:.0f} ms "
            f"| {exact['p50']:.0f} / {exact['p95']:.0f} ms | {size['rss_mb']} MB | {_ranking(size)} |"
        )
    lines += [
        "",
        f"Every timing on the default exact path unless the last column says otherwise; {retrieval['sizes'][0]['queries']} "
        "distinct questions per size, each embedded anew (no embedding cache) where the column says embedded.",
    ]
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
