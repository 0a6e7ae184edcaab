"""What a bounded session looks like to its next turn: `state()` (`--show-state`) and the token gauge. Taught in 04_bounded_memory_mongodb, "Restart and continue".

The read-only view of `BoundedMemory` (helpers/memory/bounded.py), which takes it as a mixin; the widget draws
the same dict.
"""

from __future__ import annotations

import anthropic

from helpers.conversation import text_of
from helpers.memory.window import window_tokens

__all__ = ["SessionState"]


class SessionState:
    """BoundedMemory's inspection: the session as the next turn will see it, and where its input tokens go.

    A mixin: it reads the session and token attributes `BoundedMemory` sets up (store, budget, retriever, load, ...).
    """

    def state(self) -> dict:
        """What `--show-state` prints: the session as the next turn will see it."""
        return self._state(self.load(create=False))

    def _state(self, session: dict) -> dict:
        window = [
            {"role": m["role"], "text": text_of(m), "tokens": m.get("tokens"), "seq": m.get("seq")}
            for m in session["window"]
        ]
        data = {
            "stage": self.stage,
            "memories": [],
            "retrieved": [],
            "session_id": self.session_id,
            "user_id": self.user_id,
            "summary": session.get("summary", ""),
            "summary_tokens": session.get("summary_tokens", 0),
            "summary_covers": session.get("summary_covers"),
            "retention": session.get("retention"),
            "missing": session.get("missing", []),
            "pending": len(session.get("pending", [])),
            "window": window,
            "unsummarised": session.get("unsummarised") or 0,
            "summary_warning": session.get("summary_warning"),
            "window_tokens": window_tokens(session["window"]),
            "budget": self.budget,
            "gauge": self._gauge(session),
            "version": session.get("version", 0),
            "log_count": self.store.count_logs(self.user_id, self.session_id),
        }
        if self.cache_aware:  # where the window folds and how requests are cached (helpers.memory.caching)
            data["cache_layout"] = self.cache_layout(session).to_dict()
        if self.retriever is not None:  # long-term memory: what it holds, what it sent, how the budget was split
            data.update(self.retriever.describe(session, self.recall, data["gauge"]))
        return data

    def _gauge(self, session: dict) -> dict:
        """Where the request's input tokens go: system (persona + framing), summary, memories, window."""
        summary_tokens = session.get("summary_tokens") or 0
        base = session.get("base_tokens")
        if base is None:  # no turn has counted it yet (a new session): count it now, so the gauge is never "?"
            try:
                base = self._count_base(self.system_prompt(session))
            except anthropic.APIError:  # the model cannot be reached: the gauge says "?" until a turn counts it
                base = None
        # base_tokens covers framing + persona + summary; retrieved memories change per turn and are not in it
        return {
            "system": (base - summary_tokens) if base is not None else None,
            "summary": summary_tokens,
            "memories": 0,
            "window": window_tokens(session["window"]),
            "budget": self.budget,
            "reserved_output": self.max_tokens,
        }
