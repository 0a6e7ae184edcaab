"""Long-conversation benchmark: answer-in-request recall and tokens per question, project stages against raw-turn baselines. Tools for further/05_long_conversations, section 'One context budget, split by evidence'.

`python -m helpers.bench longmem [--split tune|report|all] [--budgets 1000,2000,4000] [--json]` runs, in one
process and at the same total token budgets (system + memories + window + question, as counted by the
model's count_tokens — the offline BPE without a key):
  full, last_turns, bm25, embeddings, hybrid   the raw-turn methods (helpers.bench.longmem.baselines)
  bounded, vector   the project's stages through the CLI's own path: the transcript file is read and
              imported as `python -m helpers.chat --stage S --budget B --import FILE` does, then each
              question's request is built as `--show-request QUESTION` builds it.
A question is recalled when every gold group has a member in the request (whole words, any case).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from helpers.bench.longmem.baselines import BASELINES, RunContext, baseline_builders, full_request, turn_line
from helpers.bench.longmem.data import CATEGORIES, Conversation, Question, corpus, write_jsonl
from helpers.bench.longmem.locomo import answer_recall, evidence_coverage, write_transcript
from helpers.bench.scoring import gold_in_request
from helpers.config import load_settings
from helpers.db import store as store_module
from helpers.memory.importer import import_turns
from helpers.prompts import SCOUT_PERSONA
from helpers.retrieval.embeddings import LocalMiniLM
from helpers.sim.simulate import simulation_client
from helpers.tools import chat

__all__ = ["STAGES", "METHODS", "run_longmem", "format_table", "format_markdown"]

STAGES = ("bounded", "vector")
METHODS = ("full", *BASELINES, *STAGES)


@contextlib.contextmanager
def _store(kind: str) -> Iterator[None]:
    """`memory`: every memory the CLI path opens gets a fresh in-memory store; `local`: the CLI's own store."""
    if kind == "local":
        yield
        return
    original = store_module.open_store
    store_module.open_store = lambda settings=None, **kw: store_module.mongomock_store(f"longmem-{uuid.uuid4().hex}")
    try:
        yield
    finally:
        store_module.open_store = original


def _stage_requests(
    ctx: RunContext, conv: Conversation, stage: str, budget: int, workdir: Path, user_id: str
) -> tuple[dict[str, dict], float]:
    """Import the transcript as `python -m helpers.chat --stage S --budget B --import FILE` does, then build
    each question's request as `--show-request` does; also the import's wall-clock seconds."""
    real = any("dia_id" in t for t in conv.turns[:1])
    path = (write_transcript if real else write_jsonl)(conv, workdir / f"{conv.user_id}.jsonl")
    args = chat.build_parser().parse_args(
        [
            "--stage",
            stage,
            "--user",
            user_id,
            "--budget",
            str(budget),
            "--session-file",
            str(workdir / f"{conv.user_id}-{stage}-{budget}.sid"),
        ]
    )
    memory = chat.make_memory(args, ctx.settings, ctx.client)
    try:
        started = time.perf_counter()
        import_turns(memory, chat.read_jsonl(str(path)))  # as the CLI's --import does, for every stage
        seconds = time.perf_counter() - started
        return {q.text: memory.build_request(q.text) for q in conv.questions}, seconds
    finally:
        if hasattr(memory, "close"):
            memory.close()


def run_longmem(
    conversations: list[Conversation],
    budgets: tuple[int, ...] = (1000, 2000, 4000),
    *,
    methods: tuple[str, ...] = METHODS,
    settings=None,
    store: str = "memory",
    cache_dir: str | Path | None = "default",
    progress: Callable[[str], None] | None = None,
    details: bool = False,
) -> dict:
    """Score every method at every budget on `conversations`; returns rows of recall (overall and by category)
    and mean input tokens per question, plus, with `details`, each question's outcome."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown method(s) {', '.join(sorted(unknown))}; choose from {', '.join(METHODS)}")
    settings = settings or load_settings()
    cache = (
        Path(settings.data_dir) / "longmem-cache"
        if cache_dir == "default"
        else (Path(cache_dir) if cache_dir else None)
    )
    ctx = RunContext(simulation_client(settings), settings, SCOUT_PERSONA, LocalMiniLM(), cache)
    say = progress or (lambda _msg: None)
    outcomes: dict[tuple[str, int | None], list[dict]] = {}
    imports: list[dict] = []
    run_id = uuid.uuid4().hex[:8]
    with tempfile.TemporaryDirectory(prefix="longmem-") as tmp, _store(store):
        for conv in conversations:
            plan = [("full", None)] if "full" in methods else []
            plan += [(m, b) for b in budgets for m in methods if m != "full"]
            builders = baseline_builders(ctx, conv) if set(methods) & set(BASELINES) else {}
            for method, budget in plan:
                say(f"{conv.user_id}: {method} {budget or ''}")
                if method in STAGES:
                    user_id = conv.user_id if store == "memory" else f"longmem-{run_id}-{conv.user_id}"
                    requests, seconds = _stage_requests(ctx, conv, method, budget, Path(tmp), user_id)
                    imports.append(
                        {
                            "method": method,
                            "budget": budget,
                            "user": conv.user_id,
                            "turns": len(conv.turns),
                            "seconds": round(seconds, 2),
                        }
                    )
                    build = lambda q, b, r=requests: r[q.text]  # noqa: E731
                elif method == "full":
                    build = lambda q, b, c=conv: full_request(ctx, c, q.text)  # noqa: E731
                else:
                    build = builders[method]
                for q in conv.questions:
                    request = build(q, budget)
                    outcomes.setdefault((method, budget), []).append(_outcome(ctx, conv, q, request))
    rows = [_row(method, budget, items, details) for (method, budget), items in outcomes.items()]
    questions = sum(len(c.questions) for c in conversations)
    return {
        "conversations": [c.user_id for c in conversations],
        "turns": sum(len(c.turns) for c in conversations),
        "questions": questions,
        "budgets": list(budgets),
        "store": store,
        "rows": rows,
        "imports": imports,
    }


def _outcome(ctx: RunContext, conv: Conversation, q: Question, request: dict) -> dict:
    """One question's score: answer recall (real data: share of the answer's content words; generated data: 1
    when every gold group is there), evidence coverage (share of evidence turns sent verbatim), tokens."""
    recall = answer_recall(request, q.answer) if q.answer is not None else float(gold_in_request(request, q.gold))
    evidence = evidence_coverage(request, [turn_line(conv.turns[i]) for i in q.evidence])
    out = {
        "user": conv.user_id,
        "qid": q.qid,
        "category": q.category,
        "question": q.text,
        "recalled": round(recall, 4),
        "evidence": evidence,
        "tokens": ctx.count(request),
    }
    if q.answer is not None:  # real data stays out of results files (its licence): the question id is enough
        out.pop("question")
    return out


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _row(method: str, budget: int | None, items: list[dict], details: bool) -> dict:
    """Means over questions: recall (overall and per category), evidence coverage, tokens per question."""
    row = {
        "method": method,
        "budget": budget,
        "questions": len(items),
        "recall": _mean([i["recalled"] for i in items]),
        "evidence": _mean([i["evidence"] for i in items if i["evidence"] is not None]),
        "tokens_per_question": round(sum(i["tokens"] for i in items) / len(items), 1),
        "by_category": {c: _mean([i["recalled"] for i in items if i["category"] == c]) or 0.0 for c in CATEGORIES},
    }
    if details:
        row["details"] = items
    return row


def _cells(result: dict):
    """Each row's cells in table order: budget, method, recall, evidence, recall per category, tokens/question."""
    for row in sorted(result["rows"], key=lambda r: (r["budget"] or 0, METHODS.index(r["method"]))):
        yield (
            row["budget"] or "-",
            row["method"],
            row["recall"],
            row.get("evidence"),
            *(row["by_category"][c] for c in CATEGORIES),
            row["tokens_per_question"],
        )


def _pct(value: float | None, width: int) -> str:
    return f"{value:>{width}.1%}" if value is not None else f"{'-':>{width}}"


def format_table(result: dict) -> str:
    """The rows as a plain-text table: one block per budget, recall overall, evidence, by category, tokens."""
    head = (
        f"{'budget':>6} {'method':>11} {'recall':>7} {'evid.':>6} {'single':>7} {'multi':>6} {'temporal':>9} "
        f"{'open':>6} {'tokens/q':>9}"
    )
    lines = [
        f"# longmem · {', '.join(result['conversations'])} · {result['turns']} turns · "
        f"{result['questions']} questions · store {result['store']}",
        head,
    ]
    for budget, method, recall, evidence, single, multi, temporal, open_, tokens in _cells(result):
        lines.append(
            f"{budget:>6} {method:>11} {recall:>7.1%} {_pct(evidence, 6)} {single:>7.1%} {multi:>6.1%} "
            f"{temporal:>9.1%} {open_:>6.1%} {tokens:>9,.0f}"
        )
    return "\n".join(lines)


def format_markdown(result: dict) -> str:
    """The rows as a Markdown table (for docs and notebooks): recall, evidence, by category, tokens/question."""
    lines = [
        "| budget | method | recall | evidence | single-hop | multi-hop | temporal | open-domain | tokens/question |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for budget, method, recall, evidence, *rates, tokens in _cells(result):
        cells = [f"{recall:.1%}", _pct(evidence, 0).strip(), *(f"{r:.1%}" for r in rates)]
        lines.append(f"| {budget} | {method} | " + " | ".join(cells) + f" | {tokens:,.0f} |")
    return "\n".join(lines)


def load_split(split: str) -> list[Conversation]:
    """The corpus conversations of `split` (tune, report or all)."""
    return corpus(split)


__all__.append("load_split")
