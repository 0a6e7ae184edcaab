"""Plumbing: docs/longmem.md, written from the current results files (docs/results/longmem_*.json) by `python -m helpers.bench all` (or `python -m helpers.bench.longmem_page`); `tests/bench/test_longmem_page.py` fails when the page drifts from them.

Nothing in the page is typed: each table is the file's rows, each comparison is the paired difference over the
same questions (helpers.bench.results.paired_difference), and whether the vector stage is above or below the
strongest raw-turn baseline is read from that interval.
"""

from __future__ import annotations

import sys
from pathlib import Path

from helpers.bench.longmem.methods import format_markdown
from helpers.bench.results import RESULTS_DIR, load_results, paired_difference

__all__ = ["PAGE", "render", "write_page"]

PAGE = RESULTS_DIR.parent / "longmem.md"
BASELINES = ("bm25", "embeddings", "hybrid")
NAMES = {"bm25": "BM25", "embeddings": "MiniLM", "hybrid": "hybrid"}
FILES = (
    ("longmem_locomo", "Real conversations (LoCoMo)"),
    ("longmem_generated", "Generated conversations"),
)

HEAD = """# Long-conversation benchmark (`python -m helpers.bench longmem`)

> Generated from the results files by `python -m helpers.bench all` (helpers/bench/longmem_page.py): do not edit
> by hand. Each table below is the file's own rows, at the commit its provenance names. The dated log of earlier
> runs, of what was tried and not kept, is in this page's git history (`git log -p docs/longmem.md`).

Issue 13 asks whether the project's memory holds up on long, multi-session, two-person conversations, against
the simple baselines a sceptic would try first, at the same token budget.

## What runs

For every question, each method builds the request it would send, and the question counts as recalled when
every gold answer group has a member in that request (whole words, any case: `helpers/bench/scoring.py`). On
LoCoMo, recall is the share of the gold answer's content words in the request, and evidence the share of the
turns holding the answer sent verbatim. Tokens per question are the request's input tokens as `count_tokens`
counts them (offline: the local BPE); every method is held to the same **total** budget (persona + memories +
window + question).

| method | what the request carries |
|---|---|
| `full` | the whole dated transcript (upper bound; no budget) |
| `last_turns` | the most recent turns that fit |
| `bm25` | BM25 over raw turns, best turns that fit (only turns sharing a word with the question) |
| `embeddings` | local MiniLM cosine over raw turns, best turns that fit |
| `hybrid` | reciprocal-rank fusion (k=60) of `bm25` and `embeddings` |
| `vector` | the project's vector stage through the CLI's own path: the transcript is imported as `python -m helpers.chat --stage vector --budget B --import FILE` does, then each question's request is built as `--show-request` builds it |

Parameters are chosen on the **tune** part only; the **report** part is run only to report. LoCoMo is real data
(CC BY-NC): it is read from a path and never committed. The generated conversations come from
`helpers/bench/longmem/data.py` (seeded phrasing pools; questions paraphrased so none contains its answer).
"""

CAVEATS = """## Caveats

- The whole transcript is the upper bound of answer-*in-request*, not of answer correctness: a request can hold
  the answer and a model still miss it.
- Questions of one conversation are not independent: an interval over pooled questions says how sure we are
  about *these* conversations, not about conversations in general.
- The generated conversations have the shape of real chat (dates, drift, corrections, both speakers) but not its
  mess; their questions are lexically far from their answers, which handicaps BM25. LoCoMo is the check that
  matters.
"""


def _part_section(title: str, split: str, part: dict) -> list[str]:
    source = part["provenance"]
    lines = [
        f"### {title}: {split} part ({', '.join(part['conversations'])}; {part['turns']:,} turns, "
        f"{part['questions']} questions)",
        "",
        f"`{source['command']}` at commit `{source['commit'][:10]}`, {source['date']}, {source['mode']}.",
        "",
        format_markdown(part),
        "",
    ]
    has_details = all("details" in row for row in part["rows"])
    methods = {row["method"] for row in part["rows"]}
    if not has_details or "vector" not in methods:
        return lines
    lines.append(
        "**The vector stage against the strongest raw-turn baseline at each budget** (recall, paired over the "
        "same questions, 95% interval):"
    )
    lines.append("")
    for budget in part["budgets"]:
        rows = {r["method"]: r for r in part["rows"] if r["budget"] == budget}
        present = [b for b in BASELINES if b in rows]
        if not present or "vector" not in rows:
            continue
        best = max(present, key=lambda b: rows[b]["recall"])
        diff = paired_difference(part, "vector", best, budget)
        verdict = "above" if diff["low"] > 0 else "below" if diff["high"] < 0 else "not distinguishable from"
        lines.append(
            f"- {budget:,} tokens: vector {rows['vector']['recall']:.1%} against {NAMES[best]} over raw turns "
            f"{rows[best]['recall']:.1%}: {diff['difference'] * 100:+.1f} points "
            f"({diff['low'] * 100:+.1f}..{diff['high'] * 100:+.1f}, n={diff['n']}), **{verdict}** it."
        )
    lines.append("")
    return lines


def render() -> str:
    """The page's text from the current results files."""
    out = [HEAD, "## Results", ""]
    for name, title in FILES:
        doc = load_results(name)
        out.append(f"Results file: [results/{name}.json](results/{name}.json).")
        out.append("")
        for split in ("tune", "report"):
            if split in doc["parts"]:
                out.extend(_part_section(title, split, doc["parts"][split]))
    out.append(CAVEATS)
    return "\n".join(out)


def write_page(path: Path = PAGE) -> Path:
    path.write_text(render(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_page(Path(sys.argv[1]) if len(sys.argv) > 1 else PAGE))
