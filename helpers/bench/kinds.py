"""The `kinds` benchmark: who decides what to remember, on one scripted chat. Tools for 06_memory_tool, section 'Who decides what to remember'.

Four memories, the same recall script (helpers.sim.scripts.recall_script: the trip chat with planted facts and
details) and the same questions (recall_questions), through the simulation client (offline unless SIMULATE_LIVE=1):

- `bounded`: the application decides (04): a window and a rolling summary, per session;
- `vector`: the application decides (05): facts and episodes per user, retrieved per question;
- `memory_tool`: the model decides (06): files it writes and reads with the memory tool, per user;
- `compaction`: the platform decides: the whole history resent, compacted server-side by `compact_20260112` once
  a request reaches the trigger (50,000 input tokens, the documented minimum), on a model that has compaction.

The chat is told in one session. Then every question is asked twice: at the end of that session, and in a new
session of the same user. A question is *answered* when its expected answer is in the reply. Calls, input tokens
and USD count every request of the run (chat and upkeep: summaries, extraction, memory commands, the compaction
step) at the list price of each row's model, without prompt caching. Offline, the replies are the stand-in's and
the memory tool's commands are its stated policy (helpers/offline/memory_policy.py); live, Claude decides.

    python -m helpers.bench kinds --turns 40      # writes docs/results/memory_kinds.json (the committed file)
    python -m helpers.bench kinds --turns 40 320  # 320 turns: ~54,000 tokens of user text + 150-token replies, past the trigger
"""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace
from typing import Any

import anthropic

from helpers.bench.common import positive_int
from helpers.bench.cost_report import provenance
from helpers.bench.results import RESULTS_DIR
from helpers.config import Settings, load_settings
from helpers.db.store import mongomock_store
from helpers.pricing import CostLedger
from helpers.sim.scripts import TRIP_PERSONA, recall_questions, recall_script
from helpers.sim.simulate import simulation_client
from helpers.sim.strategies import make_strategy

__all__ = ["KINDS", "COMPACTION_MODEL", "COMPACT_TRIGGER", "PlatformCompaction", "measure_kinds", "add_kinds"]

KINDS = (
    ("bounded", "application", {"budget": 300}),
    ("vector", "application", {"budget": 300, "memory_budget": 300}),
    ("memory_tool", "model", {"budget": 300}),
    ("compaction", "platform", {}),
)
COMPACTION_MODEL = "claude-sonnet-4-6"  # compaction needs Opus 4.6 or later (not claude-haiku-4-5)
COMPACT_TRIGGER = 50_000  # the documented minimum trigger
OUT = RESULTS_DIR / "memory_kinds.json"


class PlatformCompaction:
    """The whole history resent each turn with `compact_20260112`; the compaction block the API returns is kept in
    the history and sent back, so later requests start from it (https://platform.claude.com/docs/en/build-with-
    claude/compaction). One session: a new one starts from nothing."""

    stage = "compaction"

    def __init__(self, client: anthropic.Anthropic, *, system: str, ledger: CostLedger, max_tokens: int = 1024):
        self.client, self.system, self.ledger, self.max_tokens = client, system, ledger, max_tokens
        self.messages: list[dict] = []
        self.compactions = 0

    def turn(self, text: str) -> Any:
        self.messages.append({"role": "user", "content": text})
        edit = {"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": COMPACT_TRIGGER}}
        reply = self.client.beta.messages.create(
            model=COMPACTION_MODEL,
            max_tokens=self.max_tokens,
            system=self.system,
            messages=self.messages,
            betas=["compact-2026-01-12"],
            context_management={"edits": [edit]},
        )
        for step in reply.usage.iterations or []:
            if step.type == "compaction":  # billed, but not in the top-level usage
                self.ledger.record("compaction", COMPACTION_MODEL, step)
                self.compactions += 1
        self.ledger.record("chat", COMPACTION_MODEL, reply.usage)
        self.messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in reply.content]})
        said = "".join(b.text for b in reply.content if b.type == "text")
        return SimpleNamespace(reply=said, input_tokens=reply.usage.input_tokens)


def _memory(name: str, kwargs: dict, client, settings: Settings, store, user: str, session: str, ledger: CostLedger):
    if name == "compaction":
        return PlatformCompaction(client, system=TRIP_PERSONA, ledger=ledger)
    return make_strategy(
        name, client, settings, store=store, user_id=user, session_id=session, system=TRIP_PERSONA, ledger=ledger,
        **kwargs,
    )  # fmt: skip


def measure_kinds(turns: int, *, settings: Settings | None = None, store: Any = None) -> dict:
    """One row per kind of memory on a `turns`-turn chat: answered in the same and in a new session, calls, tokens,
    USD (see the module docstring)."""
    settings = settings or load_settings()
    client = simulation_client(settings)
    store = store if store is not None else mongomock_store("kinds")
    script, questions = recall_script(turns), recall_questions()
    rows = {}
    for name, decides, kwargs in KINDS:
        ledger, user = CostLedger(), f"kinds-{name}-{turns}"
        told = _memory(name, kwargs, client, settings, store, user, "told", ledger)
        for text in script:
            told.turn(text)
        same = sum(answer.lower() in told.turn(q).reply.lower() for _, q, answer in questions)
        fresh = _memory(name, kwargs, client, settings, store, user, "new", ledger)
        new = sum(answer.lower() in fresh.turn(q).reply.lower() for _, q, answer in questions)
        totals = ledger.totals()
        rows[name] = {
            "decides": decides,
            "model": COMPACTION_MODEL if name == "compaction" else settings.chat_model,
            "answered_same_session": same,
            "answered_new_session": new,
            "questions": len(questions),
            "calls": totals["calls"],
            "input_tokens": totals["input_tokens"],
            "output_tokens": totals["output_tokens"],
            "cost_usd": round(totals["cost_usd"], 6),
            "compactions": getattr(told, "compactions", None),
        }
        for memory in (told, fresh):
            if hasattr(memory, "close"):
                memory.close()
    return {"turns": turns, "rows": rows}


def run_kinds(args: argparse.Namespace) -> int:
    """`kinds`: measure every chat length, print the table, write the results file with its provenance."""
    report = {"provenance": provenance(["kinds", "--turns", *map(str, args.turns)]), "chats": []}
    for unused in ("seconds_per_turn", "window_budget", "keep_last", "memory_budget"):  # cost's settings, not ours
        report["provenance"].pop(unused, None)
    report["provenance"]["data"] = "helpers.sim.scripts.recall_script and recall_questions, persona TRIP_PERSONA"
    report["provenance"]["kinds"] = {name: {"decides": decides, **kw} for name, decides, kw in KINDS}
    report["provenance"]["compaction"] = {"model": COMPACTION_MODEL, "trigger_input_tokens": COMPACT_TRIGGER}
    for turns in args.turns:
        report["chats"].append(measure_kinds(turns))
        for name, row in report["chats"][-1]["rows"].items():
            print(
                f"{turns:>4} turns  {name:12} ({row['decides']:11}) answered {row['answered_same_session']:>2}"
                f"/{row['questions']} same session, {row['answered_new_session']:>2} new  calls {row['calls']:>5}"
                f"  input {row['input_tokens']:>9,}  USD {row['cost_usd']:.4f}"
            )
        if args.write:  # after each chat length: a long run stopped early keeps the chats it finished
            OUT.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
            print("wrote", OUT, flush=True)
    return 0


def add_kinds(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("kinds", help="who decides what to remember: application, model, platform, side by side")
    p.add_argument("--turns", type=positive_int, nargs="+", default=[40])
    p.add_argument("--write", action=argparse.BooleanOptionalAction, default=True)
    p.set_defaults(func=run_kinds)
