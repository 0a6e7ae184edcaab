"""What a retriever adds to a bounded turn, and where in the turn it is asked. Taught in 04_bounded_memory_mongodb, "One turn, arrow by arrow"."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from helpers.memory.history import TurnResult

__all__ = ["Recall", "Retriever"]


@dataclass
class Recall:
    """What long-term memory adds to one request: a memory block and, with one context budget, what else is sent."""

    block: str = ""  # goes into the system prompt after the summary ("" = nothing retrieved)
    hits: list = field(default_factory=list)  # the memories in the block
    window: list[dict] | None = None  # the stored window messages to send (None: all of them)
    summary_sent: bool = True  # False: the budget left the summary out of this request
    split: Any = None  # helpers.memory.budget.Split when one context budget was planned
    extra_tokens: int = 0  # request tokens beyond persona + summary + stored window (may be < 0)


class Retriever(Protocol):
    """Long-term memory as BoundedMemory calls it, at named points of a turn (helpers.memory.long_term)."""

    def attach(self, memory: Any) -> None:
        """Called once by the BoundedMemory it serves (its client, store, user and session)."""

    def recall(self, session: dict, text: str) -> Recall:
        """While building the request for `text`: what to add (and, with one context budget, what to send)."""

    def before_turn(self) -> None:
        """At the start of a turn (e.g. resubmit earlier background work that failed; the first time, `recover`)."""

    def todo_marks(self) -> dict:
        """Fields for the exchange's log entries, written before the commit: what it still owes this retriever."""

    def committed(self, session: dict, exchange: list[dict]) -> dict | None:
        """After the exchange is saved (the commit point): remember it; returns the fields that say so, set on its
        log entries when they are confirmed ({} or None: nothing to mark yet)."""

    def recover(self) -> dict:
        """On start and --rebuild: finish what committed exchanges still owe (a process died before it was written)."""

    def after_turn(self, result: TurnResult) -> None:
        """After the turn returned its result (e.g. hand the exchange to a background worker)."""

    def describe(self, session: dict, recall: Recall | None, gauge: dict) -> dict:
        """Extra `state()` fields; may update `gauge` with what the last request sent."""

    def import_transcript(self, turns: list) -> dict:
        """Import a transcript for the memory (replaces the exchange-by-exchange import)."""

    def close(self) -> None:
        """Finish background work."""
