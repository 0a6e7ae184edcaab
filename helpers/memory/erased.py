"""A running memory never writes an erased user back. Plumbing for 05_vector_memory, section 'Forget me'.

`forget_user` (helpers.memory.forget) may run in another process while a chat of that user runs. The chat's
BoundedMemory notices at its next step: the session it loaded is gone, or made again (another `created_at`), and
it starts afresh (`BoundedMemory.forgotten`). Long-term memory (helpers.memory.long_term) takes this mixin: each
write of memories for an exchange runs only while the session it came from still exists, and is undone if the
user was erased while it ran; `forgotten` drops what it keeps in this process (retries, the index's cache).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ErasureGuard"]


class ErasureGuard:
    """LongTermMemory's guard against writing an erased user back (it sets `memory`, `index`, `facts`, `_retry`)."""

    def _written_while_alive(self, life: Any, seqs: list, write: Callable[[], Any]) -> bool:
        """Run `write` (this session's memories for log entries `seqs`) only while the session of `life` exists,
        and undo it if the user was erased meanwhile. False when nothing was (or stays) written."""
        memory = self.memory
        if not memory.alive(life):
            memory.stats["memory_erased"] = memory.stats.get("memory_erased", 0) + 1
            return False
        write()
        if memory.alive(life):
            return True
        seqs = [s for s in seqs if s is not None]
        memory.store.memories.delete_many(
            {"user_id": memory.user_id, "source.session_id": memory.session_id, "source.seq": {"$in": seqs}}
        )
        self.forgotten()
        memory.stats["memory_erased"] = memory.stats.get("memory_erased", 0) + 1
        return False

    def forgotten(self) -> None:
        """The session was erased while this process ran: drop the retries, the last ranking and the index's cache
        of the user, so nothing erased is retrieved or written back."""
        self._retry.clear()
        self.ranked = []
        for index in {id(i): i for i in (self.index, getattr(self.facts, "index", None)) if i is not None}.values():
            index.invalidate(self.memory.user_id)
