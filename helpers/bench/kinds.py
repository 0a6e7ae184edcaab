"""The `kinds` benchmark: who decides what to remember, on one scripted chat. Tools for 06_memory_tool, section 'Who decides what to remember'.

Four memories, the same recall script (helpers.sim.scripts.recall_script: the trip chat with planted facts and
details) and the same questions (recall_questions), through the simulation client (offline unless SIMULATE_LIVE=1):

- `bounded`: the application decides (04): a window and a rolling summary, per session;
- `vector`: the application decides (05): facts and episodes per user, retrieved per question;
- `memory_tool`: the model decides (06): files it writes and reads with the memory tool, per user;
- `compaction`: the platform decides: the whole history resent, compacted server-side by `compact_20260112` once
  a request reaches the trigger (50,000 input tokens, the documented minimum).

Every row runs on one model, `KINDS_MODEL` (chat, summaries and extraction alike): compaction needs a model that has
it (claude-opus-4-6 or claude-sonnet-4-6 and later; not claude-haiku-4-5, the series' default,
https://platform.claude.com/docs/en/build-with-claude/compaction-threshold), so the other rows run on it too and the
USD column compares like with like. Each row names its model and counts its compactions.

The chat is told in one session. Then every question is asked twice: at the end of that session, and in a new
session of the same user. A question is *answered* when its expected answer is in the reply. Calls, input tokens
and USD count every request of the run (chat and upkeep: summaries, extraction, memory commands, the compaction
step) at the list price of each row's model, without prompt caching. Offline, the replies are the stand-in's and
the memory tool's commands are its stated policy (helpers/offline/memory_policy.py); live, Claude decides.

    python -m helpers.bench kinds --turns 40 320  # writes docs/results/memory_kinds.json (the committed file)

At 320 turns the whole history reaches the trigger near turn 290, so the compaction row compacts; at 40 it does not.
"""

from __future__ import annotations

import argparse
import json
import time
from types import SimpleNamespace
from typing import Any

import anthropic

from helpers.bench.common import positive_int
from helpers.bench.cost_report import PRICING_SOURCE, REPLY_TOKENS
from helpers.bench.results import RESULTS_DIR, machine, run_provenance
from helpers.config import Settings, load_settings
from helpers.db.store import mongomock_store
from helpers.pricing import CostLedger
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import simulation_client
from helpers.sim.strategies import make_strategy

__all__ = ["KINDS", "KINDS_MODEL", "COMPACT_TRIGGER", "PlatformCompaction", "measure_kinds", "table", "add_kinds"]

KINDS = (
    ("bounded", "application", {"budget": 300}),
    ("vector", "application", {"budget": 300, "memory_budget": 300}),
    ("memory_tool", "model", {"budget": 300}),
    ("compaction", "platform", {}),
)
KINDS_MODEL = "claude-sonnet-4-6"  # every row's model: compaction needs Sonnet 4.6 / Opus 4.6 or later (not Haiku 4.5)
COMPACT_TRIGGER = 50_000  # the documented minimum trigger
OUT = RESULTS_DIR / "memory_kinds.json"


class PlatformCompaction:
    """The whole history resent each turn with `compact_20260112`; the compaction block the API returns is kept in
    the history and sent back, so later requests start from it (https://platform.claude.com/docs/en/build-with-
    claude/compaction). One session: a new one starts from nothing."""

    stage = "compaction"

    def __init__(
        self, client: anthropic.Anthropic, *, system: str, ledger: CostLedger, max_tokens: int = 1024,
        model: str = KINDS_MODEL,
    ):  # fmt: skip
        self.client, self.system, self.ledger, self.max_tokens, self.model = client, system, ledger, max_tokens, model
        self.messages: list[dict] = []
        self.compactions = 0

    def turn(self, text: str) -> Any:
        self.messages.append({"role": "user", "content": text})
        edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": COMPACT_TRIGGER}}
        reply = self.client.beta.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            system=self.system,
            messages=self.messages,
            betas=["compact-2026-01-12"],
            context_management={"edits": [edit]},
        )
        for step in reply.usage.iterations or []:
            if step.type == "compaction":  # billed, but not in the top-level usage
                self.ledger.record("compaction", self.model, step)
                self.compactions += 1
        self.ledger.record("chat", self.model, reply.usage)
        self.messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        said = "".join(b.text for b in reply.content if b.type == "text")
        return SimpleNamespace(reply=said, input_tokens=reply.usage.input_tokens)


def _memory(name: str, kwargs: dict, client, settings: Settings, store, user: str, session: str, ledger: CostLedger):
    if name == "compaction":
        return PlatformCompaction(client, system=TRIP_PERSONA, ledger=ledger, model=settings.chat_model)
    return make_strategy(
        name, client, settings, store=store, user_id=user, session_id=session, system=TRIP_PERSONA, ledger=ledger,
        **kwargs,
    )  # fmt: skip


def measure_kinds(turns: int, *, settings: Settings | None = None, store: Any = None, model: str = KINDS_MODEL) -> dict:
    """One row per kind of memory on a `turns`-turn chat, every row on `model`: answered in the same and in a new
    session, calls, tokens, USD, compactions (see the module docstring)."""
    settings = (settings or load_settings()).with_(chat_model=model, summary_model=model, extraction_model=model)
    client = simulation_client(settings)
    script, questions = recall_script(turns), recall_questions()
    rows = {}
    for name, decides, kwargs in KINDS:
        ledger, user = CostLedger(), f"kinds-{name}-{turns}"
        # each row on its own in-memory store unless one is given: mongomock scans a collection's documents on every
        # write (its unique indexes), so rows sharing one store slow each other down as the collections grow
        store_of_row = store if store is not None else mongomock_store(f"kinds-{name}")
        told = _memory(name, kwargs, client, settings, store_of_row, user, "told", ledger)
        for text in script:
            told.turn(text)
        same = sum(answer.lower() in told.turn(q).reply.lower() for _, q, answer in questions)
        fresh = _memory(name, kwargs, client, settings, store_of_row, user, "new", ledger)
        new = sum(answer.lower() in fresh.turn(q).reply.lower() for _, q, answer in questions)
        totals = ledger.totals()
        steps = sum(entry.purpose == "compaction" for entry in ledger.entries)
        rows[name] = {
            "decides": decides,
            "model": model,
            "answered_same_session": same,
            "answered_new_session": new,
            "questions": len(questions),
            "calls": totals["calls"] - steps,  # requests sent: a compaction step runs inside its request
            "input_tokens": totals["input_tokens"],
            "output_tokens": totals["output_tokens"],
            "cost_usd": round(totals["cost_usd"], 6),
            "compactions": told.compactions if name == "compaction" else None,
        }
        for memory in (told, fresh):
            if hasattr(memory, "close"):
                memory.close()
    return {"turns": turns, "rows": rows}


def table(chat: dict) -> str:
    """The kinds table of one chat: answered in the same and a new session, calls, tokens, USD, compactions, model."""
    lines = []
    for name, row in chat["rows"].items():
        compacted = "-" if row["compactions"] is None else row["compactions"]
        lines.append(
            f"{chat['turns']:>4} turns  {name:12} ({row['decides']:11}) answered {row['answered_same_session']:>2}"
            f"/{row['questions']} same session, {row['answered_new_session']:>2} new  calls {row['calls']:>5}"
            f"  input {row['input_tokens']:>9,}  USD {row['cost_usd']:.4f}  compactions {compacted}  {row['model']}"
        )
    return "\n".join(lines)


def run_kinds(args: argparse.Namespace) -> int:
    """`kinds`: measure every chat length, print the table, write the results file with its provenance."""
    command = "python -m helpers.bench kinds --turns " + " ".join(map(str, args.turns))
    source = run_provenance(
        command, data="helpers.sim.scripts.recall_script and recall_questions, persona TRIP_PERSONA"
    )
    source["mode"] += " (token counts by the local BPE offline; prices from the model's price table)"
    source.update(reply_tokens=REPLY_TOKENS, pricing=PRICING_SOURCE, model=args.model)
    source["kinds"] = {name: {"decides": decides, **kw} for name, decides, kw in KINDS}
    source["compaction"] = {"edit": "compact_20260112", "trigger_input_tokens": COMPACT_TRIGGER}
    report = {"provenance": source, "chats": []}
    started = time.perf_counter()
    for turns in args.turns:
        began = time.perf_counter()
        report["chats"].append({**measure_kinds(turns, model=args.model), "seconds": 0.0})
        report["chats"][-1]["seconds"] = round(time.perf_counter() - began, 1)
        print(table(report["chats"][-1]), f"\n({report['chats'][-1]['seconds']} s)", flush=True)
        source["seconds"], source["finished"] = round(time.perf_counter() - started, 1), machine()
        if args.write:  # after each chat length: a long run stopped early keeps the chats it finished
            OUT.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
            print("wrote", OUT, flush=True)
    return 0


def add_kinds(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kinds", help="who decides what to remember: application, model, platform, side by side")
    p.add_argument("--turns", type=positive_int, nargs="+", default=[40, 320])
    p.add_argument("--model", default=KINDS_MODEL, help="the model every row runs on (one that has compaction)")
    p.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    p.set_defaults(func=run_kinds)
